package publish

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons a summary was published (the reason label of summaries_published_total).
const (
	reasonFirst     = "first"
	reasonChange    = "change"
	reasonHeartbeat = "heartbeat"
)

// metrics are the Publisher's collectors.
type metrics struct {
	published *prometheus.CounterVec
	errors    prometheus.Counter
	size      prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_summaries_published_total",
			Help: "Capacity summaries published to gossip, by reason (first, change, heartbeat).",
		}, []string{"reason"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_gateway_summary_publish_errors_total",
			Help: "Capacity summaries that gossip refused to publish.",
		}),
		size: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchyard_gateway_summary_size_bytes",
			Help: "Protobuf size of the last published capacity summary, before compression.",
		}),
	}
	for _, r := range []string{reasonFirst, reasonChange, reasonHeartbeat} {
		m.published.WithLabelValues(r)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.published, m.errors, m.size} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("publish: register metrics: %w", err)
		}
	}
	return m, nil
}
