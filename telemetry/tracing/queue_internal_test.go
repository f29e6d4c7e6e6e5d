package tracing

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// gateExporter is a collector under the test's control: each export blocks until the test
// answers it on results (or the export's context ends), and the spans it accepted are counted.
type gateExporter struct {
	calls    chan int   // the size of each export, as it starts
	results  chan error // the answer to the export in progress
	mu       sync.Mutex
	accepted int
	sawAbort bool
}

func newGateExporter() *gateExporter {
	return &gateExporter{calls: make(chan int, 16), results: make(chan error)}
}

func (g *gateExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	g.calls <- len(spans)
	select {
	case err := <-g.results:
		if err == nil {
			g.mu.Lock()
			g.accepted += len(spans)
			g.mu.Unlock()
		}
		return err
	case <-ctx.Done():
		g.mu.Lock()
		g.sawAbort = true
		g.mu.Unlock()
		return ctx.Err()
	}
}

func (g *gateExporter) Shutdown(context.Context) error { return nil }

// newTestQueue returns a queue of capacity 4 and batches of 2 in front of exp, which exports
// only full batches, flushes and shutdowns (no timer), and a tracer feeding it.
func newTestQueue(t *testing.T, exp sdktrace.SpanExporter) (*exportQueue, trace.Tracer, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := QueueConfig{MaxQueue: 4, MaxBatch: 2, Delay: time.Hour, Timeout: time.Hour}
	q, err := newExportQueue(exp, cfg, "switchyard", reg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(q))
	return q, tp.Tracer("test"), reg
}

func endSpans(tr trace.Tracer, n int) {
	for range n {
		_, s := tr.Start(context.Background(), "s")
		s.End()
	}
}

// TestExportQueueBoundedWhileCollectorStalls holds the first export (the collector stalls):
// spans ended meanwhile fill the queue without waiting and the rest are dropped and counted;
// the stalled export then fails (counted), and the queued spans are exported once the
// collector answers again.
func TestExportQueueBoundedWhileCollectorStalls(t *testing.T) {
	exp := newGateExporter()
	q, tr, reg := newTestQueue(t, exp)
	endSpans(tr, 2) // one full batch: its export starts and stalls
	if n := <-exp.calls; n != 2 {
		t.Fatalf("first export of %d spans, want 2", n)
	}
	done := make(chan struct{})
	go func() { endSpans(tr, 6); close(done) }() // 4 fit in the queue, 2 do not
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ending spans waited for the stalled collector")
	}
	want := func(exported, queueFull, failed, queued int) string {
		return strings.NewReplacer(
			"EXPORTED", itoa(exported), "FULL", itoa(queueFull), "FAILED", itoa(failed), "QUEUED", itoa(queued),
		).Replace(`
# HELP switchyard_trace_queue_spans Spans waiting in the export queue.
# TYPE switchyard_trace_queue_spans gauge
switchyard_trace_queue_spans QUEUED
# HELP switchyard_trace_spans_exported_total Sampled spans the OTLP collector accepted.
# TYPE switchyard_trace_spans_exported_total counter
switchyard_trace_spans_exported_total EXPORTED
# HELP switchyard_trace_spans_dropped_total Sampled spans dropped before reaching the OTLP ` +
			`collector, by reason (queue_full: the export queue was full; export_failed: the export failed or timed out).
# TYPE switchyard_trace_spans_dropped_total counter
switchyard_trace_spans_dropped_total{reason="export_failed"} FAILED
switchyard_trace_spans_dropped_total{reason="queue_full"} FULL
`)
	}
	names := []string{
		"switchyard_trace_queue_spans",
		"switchyard_trace_spans_exported_total",
		"switchyard_trace_spans_dropped_total",
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want(0, 2, 0, 4)), names...); err != nil {
		t.Fatalf("while stalled: %v", err)
	}
	exp.results <- errors.New("collector unavailable") // the stalled export fails
	go func() {
		for range exp.calls {
			exp.results <- nil // the collector is back
		}
	}()
	if err := q.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want(4, 2, 2, 0)), names...); err != nil {
		t.Fatalf("after the collector came back: %v", err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP switchyard_trace_queue_capacity_spans The export queue's capacity in spans `+
		`(OTEL_BSP_MAX_QUEUE_SIZE); spans ended while it is full are dropped.
# TYPE switchyard_trace_queue_capacity_spans gauge
switchyard_trace_queue_capacity_spans 4
`), "switchyard_trace_queue_capacity_spans"); err != nil {
		t.Fatal(err)
	}
}

// TestExportQueueShutdownBounded stops a queue whose export never returns on its own: Shutdown
// returns once its context ends, having cancelled the export, and counts its spans as dropped.
func TestExportQueueShutdownBounded(t *testing.T) {
	exp := newGateExporter()
	q, tr, _ := newTestQueue(t, exp)
	endSpans(tr, 2)
	<-exp.calls
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := q.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want the context's deadline", err)
	}
	select {
	case <-q.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the export goroutine did not stop after Shutdown")
	}
	exp.mu.Lock()
	aborted := exp.sawAbort
	exp.mu.Unlock()
	if !aborted {
		t.Error("the export in progress was not cancelled")
	}
	if got := testutil.ToFloat64(q.metrics.exportFailed); got != 2 {
		t.Errorf("dropped{export_failed} = %v, want 2", got)
	}
}

// TestExportQueueUnsampledSkipped checks that spans the sampler did not record never reach the
// queue.
func TestExportQueueUnsampledSkipped(t *testing.T) {
	exp := newGateExporter()
	reg := prometheus.NewRegistry()
	q, err := newExportQueue(exp, QueueConfig{MaxQueue: 4, MaxBatch: 2, Delay: time.Hour, Timeout: time.Hour},
		"switchyard", reg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = q.Shutdown(context.Background()) }()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(q), sdktrace.WithSampler(sdktrace.NeverSample()))
	endSpans(tp.Tracer("test"), 10)
	if n := len(q.spans); n != 0 {
		t.Fatalf("%d unsampled spans queued", n)
	}
}

func TestQueueConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want QueueConfig
	}{
		{"defaults", nil, DefaultQueueConfig()},
		{"set", map[string]string{
			"OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "10",
			"OTEL_BSP_SCHEDULE_DELAY": "250", "OTEL_BSP_EXPORT_TIMEOUT": "1000",
		}, QueueConfig{MaxQueue: 100, MaxBatch: 10, Delay: 250 * time.Millisecond, Timeout: time.Second}},
		{"batch above the queue", map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "8"},
			QueueConfig{MaxQueue: 8, MaxBatch: 8, Delay: 5 * time.Second, Timeout: 30 * time.Second}},
		{"invalid values keep the defaults", map[string]string{
			"OTEL_BSP_MAX_QUEUE_SIZE": "-1", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "x",
			"OTEL_BSP_SCHEDULE_DELAY": "0", "OTEL_BSP_EXPORT_TIMEOUT": "1e3",
		}, DefaultQueueConfig()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := queueConfigFromEnv(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
