package tracing

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const (
	clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpan  = "00f067aa0ba902b7"
)

// newTestProvider returns a provider of cfg exporting to an in-memory exporter.
func newTestProvider(t *testing.T, cfg Config) (*Provider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	qcfg := QueueConfig{MaxQueue: 4096, MaxBatch: 512, Delay: time.Hour, Timeout: time.Minute}
	p, err := newProvider(cfg, exp, resource.Empty(), qcfg, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p, exp
}

// serve is one request through a front door: the caller's headers extracted, a server span
// and a child span started and ended.
func serve(tr *Tracer, h http.Header) {
	ctx, span := tr.Start(tr.Extract(context.Background(), propagation.HeaderCarrier(h)), "server", trace.SpanKindServer)
	_, child := tr.Start(ctx, "child", trace.SpanKindInternal)
	child.End()
	span.End()
}

// TestRemoteParent checks each RemoteParent mode against a caller's traceparent with the
// sampled flag set and with it clear, at sample ratios 0 and 1: only respect lets the caller
// decide, ratio keeps its trace but decides itself, ignore starts a new trace linked to it.
func TestRemoteParent(t *testing.T) {
	type want struct {
		recorded    bool
		callerTrace bool // the spans join the caller's trace, the server span the caller's child
	}
	for _, tc := range []struct {
		name    string
		mode    string
		ratio   float64
		sampled bool
		want    want
	}{
		{"respect, ratio 0, caller sampled", RemoteParentRespect, 0, true, want{true, true}},
		{"respect, ratio 1, caller not sampled", RemoteParentRespect, 1, false, want{false, false}},
		{"ratio, ratio 0, caller sampled", RemoteParentRatio, 0, true, want{false, false}},
		{"ratio, ratio 1, caller sampled", RemoteParentRatio, 1, true, want{true, true}},
		{"ratio, ratio 1, caller not sampled", RemoteParentRatio, 1, false, want{true, true}},
		{"ignore, ratio 0, caller sampled", RemoteParentIgnore, 0, true, want{false, false}},
		{"ignore, ratio 1, caller sampled", RemoteParentIgnore, 1, true, want{true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.SampleRatio, cfg.RemoteParent = tc.ratio, tc.mode
			p, exp := newTestProvider(t, cfg)
			flags := "00"
			if tc.sampled {
				flags = "01"
			}
			serve(p.Tracer(), http.Header{
				"Traceparent": {"00-" + clientTrace + "-" + clientSpan + "-" + flags},
				"Tracestate":  {"vendor=client-chosen"},
			})
			if err := p.sdk.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			spans := exp.GetSpans()
			if !tc.want.recorded {
				if len(spans) != 0 {
					t.Fatalf("%d spans exported, want none", len(spans))
				}
				return
			}
			if len(spans) != 2 {
				t.Fatalf("%d spans exported, want the server span and its child", len(spans))
			}
			child, server := spans[0], spans[1]
			if child.Parent.SpanID() != server.SpanContext.SpanID() ||
				child.SpanContext.TraceID() != server.SpanContext.TraceID() {
				t.Errorf("the child span is not the server span's child: %v", child.Parent)
			}
			joined := server.SpanContext.TraceID().String() == clientTrace
			if joined != tc.want.callerTrace {
				t.Fatalf("server span in trace %s, caller's trace %s, want joined = %v",
					server.SpanContext.TraceID(), clientTrace, tc.want.callerTrace)
			}
			if joined {
				if server.Parent.SpanID().String() != clientSpan || server.SpanContext.TraceState().Get("vendor") == "" {
					t.Errorf("server span's parent %s, tracestate %q: want the caller's", server.Parent.SpanID(),
						server.SpanContext.TraceState())
				}
				return
			}
			if server.Parent.IsValid() || server.SpanContext.TraceState().Len() != 0 {
				t.Errorf("a new trace's root has parent %v, tracestate %q", server.Parent, server.SpanContext.TraceState())
			}
			if len(server.Links) != 1 || server.Links[0].SpanContext.TraceID().String() != clientTrace ||
				server.Links[0].SpanContext.SpanID().String() != clientSpan ||
				server.Links[0].SpanContext.TraceState().Len() != 0 {
				t.Errorf("links %+v, want one to the caller's span, without its tracestate", server.Links)
			}
		})
	}
}

// TestRemoteRatioNotByTraceID sends, in ratio mode at 0.25, requests whose traceparents carry
// trace IDs a trace-ID ratio sampler always records (their low 64 bits are zero): about a
// quarter are recorded, not all of them.
func TestRemoteRatioNotByTraceID(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SampleRatio, cfg.RemoteParent = 0.25, RemoteParentRatio
	p, exp := newTestProvider(t, cfg)
	const n = 400
	for i := range n {
		tid := [16]byte{0: byte(i >> 8), 1: byte(i), 2: 1}
		sc := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: [8]byte{7: 1}, TraceFlags: trace.FlagsSampled, Remote: true,
		})
		_, span := p.Tracer().Start(trace.ContextWithRemoteSpanContext(context.Background(), sc), "s",
			trace.SpanKindServer)
		span.End()
	}
	if err := p.sdk.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Expected 100, standard deviation under 9: the bounds are more than six deviations away.
	if got := len(exp.GetSpans()); got < 40 || got > 160 {
		t.Fatalf("%d of %d requests recorded at ratio 0.25, want about %d", got, n, n/4)
	}
}

// TestInjectReplacesCallersTracestate: what is sent on carries this process's trace context
// alone: with ignore the caller's tracestate is removed from the outgoing headers (the new trace
// has none), with respect the caller's trace and tracestate are sent on.
func TestInjectReplacesCallersTracestate(t *testing.T) {
	for _, tc := range []struct {
		mode, wantTrace, wantState string
	}{
		{RemoteParentIgnore, "", ""},
		{RemoteParentRespect, clientTrace, "vendor=client-chosen"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.RemoteParent = tc.mode
			p, _ := newTestProvider(t, cfg)
			tr := p.Tracer()
			h := http.Header{
				"Traceparent": {"00-" + clientTrace + "-" + clientSpan + "-01"},
				"Tracestate":  {"vendor=client-chosen"},
			}
			ctx, span := tr.Start(tr.Extract(context.Background(), propagation.HeaderCarrier(h)), "s", trace.SpanKindServer)
			defer span.End()
			out := h.Clone() // a forwarder's outgoing headers start as the client's
			tr.Inject(ctx, propagation.HeaderCarrier(out))
			if got := out.Get("Tracestate"); got != tc.wantState {
				t.Errorf("tracestate sent on %q, want %q", got, tc.wantState)
			}
			joined := strings.Contains(out.Get("Traceparent"), clientTrace)
			if joined != (tc.wantTrace != "") ||
				!strings.Contains(out.Get("Traceparent"), span.SpanContext().SpanID().String()) {
				t.Errorf("traceparent sent on %q (span %s)", out.Get("Traceparent"), span.SpanContext().SpanID())
			}
			m := propagation.MapCarrier{"tracestate": "vendor=client-chosen"}
			tr.Inject(ctx, m)
			if got := m["tracestate"]; got != tc.wantState {
				t.Errorf("map carrier tracestate %q, want %q", got, tc.wantState)
			}
		})
	}
}
