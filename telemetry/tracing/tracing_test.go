package tracing_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-dev/switchyard/telemetry/tracing"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*tracing.Config)
		want   string
	}{
		{"defaults", func(*tracing.Config) {}, ""},
		{"http", func(c *tracing.Config) { c.Protocol = tracing.ProtocolHTTP }, ""},
		{"bad protocol", func(c *tracing.Config) { c.Protocol = "udp" }, "Protocol"},
		{"respect", func(c *tracing.Config) { c.RemoteParent = tracing.RemoteParentRespect }, ""},
		{"ratio", func(c *tracing.Config) { c.RemoteParent = tracing.RemoteParentRatio }, ""},
		{"unknown remote parent", func(c *tracing.Config) { c.RemoteParent = "trust" }, "RemoteParent"},
		{"no remote parent", func(c *tracing.Config) { c.RemoteParent = "" }, "RemoteParent"},
		{"ratio above 1", func(c *tracing.Config) { c.SampleRatio = 1.5 }, "SampleRatio"},
		{"negative ratio", func(c *tracing.Config) { c.SampleRatio = -0.1 }, "SampleRatio"},
		{"endpoint with a space", func(c *tracing.Config) { c.Endpoint = "a b:4317" }, "Endpoint"},
		{"no metric namespace", func(c *tracing.Config) { c.MetricNamespace = "" }, "MetricNamespace"},
		{"bad metric namespace", func(c *tracing.Config) { c.MetricNamespace = "switchyard-gw" }, "MetricNamespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tracing.DefaultConfig()
			tc.mutate(&c)
			err := c.Validate()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

func TestNewEnabledOnlyWithAnEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint string
		env      map[string]string
		want     bool
	}{
		{"off by default", "", nil, false},
		{"flag", "127.0.0.1:4317", nil, true},
		{"flag URL over HTTP", "http://127.0.0.1:4318/v1/traces",
			map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, true},
		{"standard variable", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317"}, true},
		{"traces variable", "", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4317"}, true},
		{"SDK disabled", "127.0.0.1:4317", map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tracing.DefaultConfig()
			cfg.Endpoint, cfg.Insecure = tc.endpoint, true
			p, err := tracing.New(context.Background(), cfg, func(k string) string { return tc.env[k] }, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = p.Shutdown(context.Background()) }()
			if p.Enabled() != tc.want || p.Tracer().Enabled() != tc.want {
				t.Fatalf("enabled = %v, tracer enabled = %v, want %v", p.Enabled(), p.Tracer().Enabled(), tc.want)
			}
		})
	}
}

// TestMetricNamespace checks that the export queue's metrics are named by the configured
// namespace, so each binary keeps its own metric names.
func TestMetricNamespace(t *testing.T) {
	cfg := tracing.DefaultConfig()
	cfg.Endpoint, cfg.Insecure, cfg.MetricNamespace = "127.0.0.1:4317", true, "switchyard_unit"
	reg := prometheus.NewRegistry()
	p, err := tracing.New(context.Background(), cfg, nil, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Shutdown(context.Background()) }()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	want := []string{
		"switchyard_unit_trace_queue_capacity_spans",
		"switchyard_unit_trace_queue_spans",
		"switchyard_unit_trace_spans_dropped_total",
		"switchyard_unit_trace_spans_exported_total",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("metrics %v, want %v", names, want)
	}
}

// TestDisabledTracerCostsNothing checks that a disabled tracer allocates nothing and leaves the
// context and headers alone.
func TestDisabledTracerCostsNothing(t *testing.T) {
	var tr *tracing.Tracer
	ctx := context.Background()
	h := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	allocs := testing.AllocsPerRun(100, func() {
		c := tr.Extract(ctx, propagation.HeaderCarrier(h))
		c, span := tr.Start(c, "x", trace.SpanKindServer)
		tr.Inject(c, propagation.HeaderCarrier(h))
		tracing.StatusCode(span, 200)
		span.End()
		if c != ctx {
			t.Fatal("a disabled tracer changed the context")
		}
	})
	if allocs != 0 {
		t.Fatalf("a disabled tracer allocates %v times per request", allocs)
	}
	if got := h.Get("Traceparent"); !strings.HasPrefix(got, "00-4bf9") {
		t.Fatalf("traceparent changed to %q", got)
	}
}

func TestPropagation(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := tracing.NewTracer(tp, "test")
	in := http.Header{
		"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		"Tracestate":  {"vendor=1"},
	}
	ctx, span := tr.Start(tr.Extract(context.Background(), propagation.HeaderCarrier(in)), "s", trace.SpanKindServer)
	out := http.Header{"Traceparent": {"00-11111111111111111111111111111111-2222222222222222-01"}}
	tr.Inject(ctx, propagation.HeaderCarrier(out))
	span.End()
	sc := span.SpanContext()
	want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + sc.SpanID().String() + "-01"
	if got := out.Get("Traceparent"); got != want {
		t.Errorf("injected %q, want %q (the span's, replacing the client's)", got, want)
	}
	if got := out.Get("Tracestate"); got != "vendor=1" {
		t.Errorf("tracestate %q, want the caller's", got)
	}
	if ended := rec.Ended(); len(ended) != 1 || ended[0].Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("span's parent is not the caller's span: %v", ended)
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdef", 3, "abc"},
		{"héllo", 2, "h"}, // é is two bytes: not cut in half
		{"a\xffb", 10, "a\uFFFDb"},
	} {
		if got := tracing.Truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
	if v := tracing.String("k", strings.Repeat("x", 10_000)).Value.AsString(); len(v) != tracing.MaxAttributeLength {
		t.Errorf("String kept %d bytes, want %d", len(v), tracing.MaxAttributeLength)
	}
}
