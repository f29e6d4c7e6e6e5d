package tracing

import (
	"context"
	"net/http"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys this package sets.
const (
	// AttrStatus is the HTTP status StatusCode records.
	AttrStatus = "http.response.status_code"
	// AttrErrorType is the error type Fail records.
	AttrErrorType = "error.type"
)

// Tracer starts spans and carries trace context across hops. A nil *Tracer is
// disabled: Start returns the context unchanged with a span that records nothing, Extract and
// Inject do nothing. It is safe for concurrent use.
type Tracer struct {
	t    trace.Tracer
	prop propagation.TextMapPropagator
	// newRoot makes a span whose parent is remote (a caller's traceparent) a new trace's root,
	// linked to the caller's span (RemoteParentIgnore).
	newRoot bool
}

// Enabled reports whether the tracer records spans. Instrumentation that builds attributes
// checks it (or the span's IsRecording) first, so that tracing off costs nothing.
func (t *Tracer) Enabled() bool { return t != nil && t.t != nil }

// Start starts a span named name of kind as a child of the span in ctx (or of the remote
// parent Extract put there; with RemoteParentIgnore, the root of a new trace linked to that
// remote parent). Disabled, it returns ctx and the span already in ctx, a non-recording one,
// without allocating.
func (t *Tracer) Start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	if !t.Enabled() {
		return ctx, trace.SpanFromContext(ctx)
	}
	if t.newRoot {
		if parent := trace.SpanContextFromContext(ctx); parent.IsRemote() {
			// The link names the caller's span; its tracestate (up to 32 members of 512
			// bytes, chosen by the caller) is not copied into the span.
			link := trace.Link{SpanContext: parent.WithTraceState(trace.TraceState{})}
			return t.t.Start(ctx, name, trace.WithSpanKind(kind), trace.WithNewRoot(), trace.WithLinks(link))
		}
	}
	return t.t.Start(ctx, name, trace.WithSpanKind(kind))
}

// Extract returns ctx with the remote span context of carrier's traceparent and tracestate
// (a malformed traceparent is ignored: the request starts a new trace).
func (t *Tracer) Extract(ctx context.Context, carrier propagation.TextMapCarrier) context.Context {
	if !t.Enabled() {
		return ctx
	}
	return t.prop.Extract(ctx, carrier)
}

// Inject writes the traceparent (and tracestate) of the span in ctx into carrier, replacing
// what the client sent, so the next hop's spans are children of that span. A span with no
// tracestate (a new trace's, RemoteParentIgnore's included) removes the caller's tracestate
// from an http.Header or map carrier, so the next hop does not adopt it into this trace.
func (t *Tracer) Inject(ctx context.Context, carrier propagation.TextMapCarrier) {
	if !t.Enabled() {
		return
	}
	if trace.SpanContextFromContext(ctx).TraceState().Len() == 0 {
		switch c := carrier.(type) {
		case propagation.HeaderCarrier:
			http.Header(c).Del(headerTracestate)
		case propagation.MapCarrier:
			delete(c, headerTracestate)
		}
	}
	t.prop.Inject(ctx, carrier)
}

// headerTracestate is W3C trace context's tracestate header (as the propagator writes it).
const headerTracestate = "tracestate"

// String is a string attribute whose value is cut to MaxAttributeLength bytes (at a rune
// boundary, invalid UTF-8 replaced), so no request can make a span large.
func String(key, v string) attribute.KeyValue {
	return attribute.String(key, Truncate(v, MaxAttributeLength))
}

// Truncate cuts s to at most n bytes at a rune boundary, replacing invalid UTF-8.
func Truncate(s string, n int) string {
	if !utf8.ValidString(s) {
		s = toValid(s)
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func toValid(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		out = append(out, r) // invalid bytes decode as utf8.RuneError
	}
	return string(out)
}

// Milliseconds is a duration attribute in milliseconds (fractional).
func Milliseconds(key string, d time.Duration) attribute.KeyValue {
	return attribute.Float64(key, float64(d.Microseconds())/1000)
}

// Fail marks span as failed with a bounded error type (a fixed, low-cardinality spelling such
// as "upstream_unreachable") and the error's message.
func Fail(span trace.Span, errType, msg string) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(String(AttrErrorType, errType))
	span.SetStatus(codes.Error, Truncate(msg, MaxAttributeLength))
}

// StatusCode records an HTTP status on span; 5xx marks it failed (a server span's error).
func StatusCode(span trace.Span, status int) {
	if !span.IsRecording() || status == 0 {
		return
	}
	span.SetAttributes(attribute.Int(AttrStatus, status))
	if status >= 500 {
		span.SetStatus(codes.Error, "")
	}
}

// NewTracer returns a Tracer over tp (an SDK provider built elsewhere, or a test's provider
// with an in-memory exporter) whose spans have the instrumentation scope scope, propagating W3C
// trace context. A nil tp returns a disabled one.
func NewTracer(tp trace.TracerProvider, scope string) *Tracer {
	if tp == nil {
		return nil
	}
	return &Tracer{t: tp.Tracer(scope), prop: propagation.TraceContext{}}
}
