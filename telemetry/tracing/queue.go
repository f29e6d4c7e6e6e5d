package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// QueueConfig bounds the export queue: the spans waiting for the collector, and how they leave.
// The standard OTEL_BSP_* variables set it (queueConfigFromEnv); a variable that is unset, not
// an integer or not above 0 keeps the default.
type QueueConfig struct {
	// MaxQueue is the most spans waiting for export; a span ended while the queue is full is
	// dropped (and counted). OTEL_BSP_MAX_QUEUE_SIZE, default 2048.
	MaxQueue int
	// MaxBatch is the most spans in one export; a full batch leaves at once.
	// OTEL_BSP_MAX_EXPORT_BATCH_SIZE, default 512 (at most MaxQueue).
	MaxBatch int
	// Delay is the longest a span waits for its batch to fill. OTEL_BSP_SCHEDULE_DELAY (ms),
	// default 5 s.
	Delay time.Duration
	// Timeout bounds one export, after which its spans are dropped (and counted).
	// OTEL_BSP_EXPORT_TIMEOUT (ms), default 30 s.
	Timeout time.Duration
}

// DefaultQueueConfig returns the defaults documented on QueueConfig (the SDK's).
func DefaultQueueConfig() QueueConfig {
	return QueueConfig{
		MaxQueue: sdktrace.DefaultMaxQueueSize,
		MaxBatch: sdktrace.DefaultMaxExportBatchSize,
		Delay:    sdktrace.DefaultScheduleDelay * time.Millisecond,
		Timeout:  sdktrace.DefaultExportTimeout * time.Millisecond,
	}
}

// queueConfigFromEnv returns the defaults overridden by the OTEL_BSP_* variables getenv reads.
func queueConfigFromEnv(getenv func(string) string) QueueConfig {
	c := DefaultQueueConfig()
	positive := func(key string) (int, bool) {
		n, err := strconv.Atoi(strings.TrimSpace(getenv(key)))
		return n, err == nil && n > 0
	}
	if n, ok := positive("OTEL_BSP_MAX_QUEUE_SIZE"); ok {
		c.MaxQueue = n
	}
	if n, ok := positive("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"); ok {
		c.MaxBatch = n
	}
	if n, ok := positive("OTEL_BSP_SCHEDULE_DELAY"); ok {
		c.Delay = time.Duration(n) * time.Millisecond
	}
	if n, ok := positive("OTEL_BSP_EXPORT_TIMEOUT"); ok {
		c.Timeout = time.Duration(n) * time.Millisecond
	}
	c.MaxBatch = min(c.MaxBatch, c.MaxQueue)
	return c
}

// exportQueue is the span processor between the tracer and the OTLP exporter: ending a span
// puts it on a bounded queue without waiting, and one goroutine exports the queue in batches.
// A collector that is down, slow or refusing therefore never delays a request: the queue
// fills, and the spans that do not fit are dropped and counted, as are those of a failed
// export. It is safe for concurrent use.
type exportQueue struct {
	exp     sdktrace.SpanExporter
	cfg     QueueConfig
	metrics *queueMetrics
	log     *slog.Logger

	spans chan sdktrace.ReadOnlySpan
	flush chan chan struct{} // ForceFlush's requests, acknowledged once the queue was exported
	stop  chan struct{}      // closed by Shutdown
	done  chan struct{}      // closed when the export goroutine returned
	// abort cancels the export in progress when Shutdown's context ends first.
	abort    context.Context
	cancel   context.CancelFunc
	stopOnce sync.Once

	mu       sync.Mutex
	dropping bool // a queue-full drop was logged since the last successful export
}

var _ sdktrace.SpanProcessor = (*exportQueue)(nil)

// newExportQueue registers the metrics of a queue in front of exp on reg, named by
// metricNamespace, and starts its export goroutine.
func newExportQueue(
	exp sdktrace.SpanExporter,
	cfg QueueConfig,
	metricNamespace string,
	reg prometheus.Registerer,
	log *slog.Logger,
) (*exportQueue, error) {
	spans := make(chan sdktrace.ReadOnlySpan, cfg.MaxQueue)
	m, err := newQueueMetrics(reg, metricNamespace, cfg.MaxQueue, func() int { return len(spans) })
	if err != nil {
		return nil, err
	}
	q := &exportQueue{
		exp: exp, cfg: cfg, metrics: m, log: log,
		spans: spans,
		flush: make(chan chan struct{}),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	q.abort, q.cancel = context.WithCancel(context.Background())
	go q.run()
	return q, nil
}

// OnStart does nothing: spans are queued when they end.
func (q *exportQueue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues a sampled span for export, or drops it when the queue is full. It never blocks.
func (q *exportQueue) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	select {
	case q.spans <- s:
	default:
		q.metrics.queueFull.Inc()
		q.mu.Lock()
		first := !q.dropping
		q.dropping = true
		q.mu.Unlock()
		if first {
			q.log.Warn("trace export queue full, dropping spans", "max_queue", q.cfg.MaxQueue)
		}
	}
}

// run exports full batches at once and the rest every Delay, until Shutdown.
func (q *exportQueue) run() {
	defer close(q.done)
	batch := make([]sdktrace.ReadOnlySpan, 0, q.cfg.MaxBatch)
	tick := time.NewTicker(q.cfg.Delay)
	defer tick.Stop()
	failing := false
	for {
		select {
		case s := <-q.spans:
			if batch = append(batch, s); len(batch) >= q.cfg.MaxBatch {
				batch, failing = q.export(batch, failing)
			}
		case <-tick.C:
			batch, failing = q.export(batch, failing)
		case ack := <-q.flush:
			batch, failing = q.drain(batch, failing)
			close(ack)
		case <-q.stop:
			q.drain(batch, failing)
			return
		}
	}
}

// drain exports batch and the spans queued now (not those queued meanwhile, so a busy process
// cannot keep it draining).
func (q *exportQueue) drain(batch []sdktrace.ReadOnlySpan, failing bool) ([]sdktrace.ReadOnlySpan, bool) {
	for range len(q.spans) {
		if batch = append(batch, <-q.spans); len(batch) >= q.cfg.MaxBatch {
			batch, failing = q.export(batch, failing)
		}
	}
	return q.export(batch, failing)
}

// export sends batch within Timeout and counts its spans as exported or dropped; it logs when
// exports start failing and when they recover. It returns the emptied batch.
func (q *exportQueue) export(batch []sdktrace.ReadOnlySpan, failing bool) ([]sdktrace.ReadOnlySpan, bool) {
	if len(batch) == 0 {
		return batch, failing
	}
	ctx, cancel := context.WithTimeout(q.abort, q.cfg.Timeout)
	err := q.exp.ExportSpans(ctx, batch)
	cancel()
	n := float64(len(batch))
	clear(batch)
	if err != nil {
		q.metrics.exportFailed.Add(n)
		if !failing {
			q.log.Warn("trace export failing, dropping spans", "spans", n, "err", err)
		}
		return batch[:0], true
	}
	q.metrics.exported.Add(n)
	if failing {
		q.log.Info("trace export recovered")
	}
	q.mu.Lock()
	q.dropping = false
	q.mu.Unlock()
	return batch[:0], false
}

// ForceFlush exports every span queued now, within ctx.
func (q *exportQueue) ForceFlush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case q.flush <- ack:
	case <-q.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("tracing: flush: %w", ctx.Err())
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("tracing: flush: %w", ctx.Err())
	}
}

// Shutdown exports the spans still queued and stops the exporter, within ctx: when ctx ends
// first the export in progress is abandoned and its spans counted as dropped.
func (q *exportQueue) Shutdown(ctx context.Context) error {
	q.stopOnce.Do(func() { close(q.stop) })
	var err error
	select {
	case <-q.done:
	case <-ctx.Done():
		q.cancel()
		err = fmt.Errorf("tracing: flush at shutdown: %w", ctx.Err())
	}
	q.cancel()
	if serr := q.exp.Shutdown(ctx); serr != nil && err == nil {
		err = fmt.Errorf("tracing: exporter shutdown: %w", serr)
	}
	return err
}
