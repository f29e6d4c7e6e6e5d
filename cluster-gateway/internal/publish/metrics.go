package publish

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract"
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
	// The reason label's values: contract's publish reasons (first, change, heartbeat).
	for _, r := range contract.Reasons(contract.UsePublish) {
		m.published.WithLabelValues(r.String())
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
