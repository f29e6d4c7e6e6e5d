package tracing

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons a span is dropped (the reason label of the dropped counter).
const (
	// DropQueueFull: the span ended while the export queue was full.
	DropQueueFull = "queue_full"
	// DropExportFailed: the span's export failed or timed out (the collector refused it, was
	// unreachable or too slow).
	DropExportFailed = "export_failed"
)

// queueMetrics counts what became of the sampled spans.
type queueMetrics struct {
	exported, queueFull, exportFailed prometheus.Counter
}

// newQueueMetrics registers the export queue's metrics, named namespace_trace_*, on reg: spans
// exported, spans dropped by reason, and the queue's length (queued) and capacity.
func newQueueMetrics(
	reg prometheus.Registerer,
	namespace string,
	capacitySpans int,
	queued func() int,
) (*queueMetrics, error) {
	metricPrefix := namespace + "_trace_"
	exported := prometheus.NewCounter(prometheus.CounterOpts{
		Name: metricPrefix + "spans_exported_total",
		Help: "Sampled spans the OTLP collector accepted.",
	})
	dropped := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricPrefix + "spans_dropped_total",
		Help: "Sampled spans dropped before reaching the OTLP collector, by reason " +
			"(queue_full: the export queue was full; export_failed: the export failed or timed out).",
	}, []string{"reason"})
	length := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: metricPrefix + "queue_spans",
		Help: "Spans waiting in the export queue.",
	}, func() float64 { return float64(queued()) })
	capacity := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: metricPrefix + "queue_capacity_spans",
		Help: "The export queue's capacity in spans (OTEL_BSP_MAX_QUEUE_SIZE); spans ended while it is full are dropped.",
	})
	capacity.Set(float64(capacitySpans))
	var errs []error
	for _, c := range []prometheus.Collector{exported, dropped, length, capacity} {
		errs = append(errs, reg.Register(c))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("tracing: register metrics: %w", err)
	}
	return &queueMetrics{
		exported:     exported,
		queueFull:    dropped.WithLabelValues(DropQueueFull),
		exportFailed: dropped.WithLabelValues(DropExportFailed),
	}, nil
}
