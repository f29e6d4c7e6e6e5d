package tracing_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// stalledCollector accepts connections and never answers, like a collector that hangs.
func stalledCollector(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never read
		}
	}()
	return ln.Addr().String()
}

// refusingCollector returns an address where nothing listens: every connection is refused.
func refusingCollector(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// TestCollectorDownDropsSpans traces through the real OTLP exporters (gRPC and HTTP) to a
// collector that refuses connections or accepts and never answers: ending spans never waits
// for it, the export queue stays within its capacity, the spans that do not fit or whose export
// fails are dropped and counted, none counts as exported, and shutdown returns within its
// context although the collector never answers.
func TestCollectorDownDropsSpans(t *testing.T) {
	const spans = 2000
	env := map[string]string{
		"OTEL_BSP_MAX_QUEUE_SIZE":        "64",
		"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "16",
		"OTEL_BSP_SCHEDULE_DELAY":        "10",
		"OTEL_BSP_EXPORT_TIMEOUT":        "300",
	}
	for _, tc := range []struct {
		name, protocol string
		collector      func(*testing.T) string
	}{
		{"grpc refused", tracing.ProtocolGRPC, refusingCollector},
		{"grpc stalled", tracing.ProtocolGRPC, stalledCollector},
		{"http refused", tracing.ProtocolHTTP, refusingCollector},
		{"http stalled", tracing.ProtocolHTTP, stalledCollector},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tracing.DefaultConfig()
			cfg.Endpoint, cfg.Protocol, cfg.Insecure = tc.collector(t), tc.protocol, true
			reg := prometheus.NewRegistry()
			p, err := tracing.New(context.Background(), cfg, func(k string) string { return env[k] }, nil, reg)
			if err != nil {
				t.Fatal(err)
			}
			tr := p.Tracer()
			maxQueued := -1.0
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := range spans {
					_, s := tr.Start(context.Background(), "request", trace.SpanKindServer)
					s.End()
					if i%100 == 0 {
						maxQueued = max(maxQueued, value(reg, "switchyard_trace_queue_spans", "", ""))
					}
				}
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("ending spans waited for the collector")
			}
			if maxQueued < 0 || maxQueued > 64 {
				t.Errorf("the export queue held %v spans, above its capacity of 64", maxQueued)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = p.Shutdown(ctx) // returns: the test would time out otherwise
			const dropName = "switchyard_trace_spans_dropped_total"
			dropped := value(reg, dropName, "reason", tracing.DropQueueFull) +
				value(reg, dropName, "reason", tracing.DropExportFailed)
			if dropped < spans-64 {
				t.Errorf("%v spans counted as dropped, want at least %d of %d", dropped, spans-64, spans)
			}
			if got := value(reg, "switchyard_trace_spans_exported_total", "", ""); got != 0 {
				t.Errorf("%v spans counted as exported to a dead collector", got)
			}
		})
	}
}

// value returns the value of the metric name in reg whose labels (if any) include label=v, or
// -1 when there is none.
func value(reg *prometheus.Registry, name, label, v string) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, l := range m.GetLabel() {
				match = match || l.GetName() == label && l.GetValue() == v
			}
			switch {
			case !match:
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			default:
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}
