package datastore

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// storeMetrics are the store's gateway metrics. Gauges are computed when scraped, so the hot path
// pays nothing for them.
type storeMetrics struct {
	ejections prometheus.Counter
	refused   prometheus.Counter
}

// newStoreMetrics registers the store's collectors on reg (nothing when reg is nil).
func newStoreMetrics(s *Store, reg prometheus.Registerer) *storeMetrics {
	m := &storeMetrics{ejections: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchyard_gateway_endpoint_ejections_total",
		Help: "Times an endpoint was ejected by passive health checking (outlier detection).",
	}), refused: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchyard_gateway_endpoint_ejections_refused_total",
		Help: "Ejections passive health checking refused because the share of endpoints ejected at once had reached " +
			"--max-ejection-percent.",
	})}
	if reg == nil {
		return m
	}
	reg.MustRegister(
		m.ejections,
		m.refused,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "switchyard_gateway_endpoints",
			Help: "Model-server endpoints currently discovered.",
		}, func() float64 { return float64(s.Len()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "switchyard_gateway_endpoints_ejected",
			Help: "Endpoints currently in an ejection backoff.",
		}, func() float64 { return float64(countEjected(s.Endpoints(), time.Now())) }),
	)
	return m
}

func countEjected(eps []*Endpoint, now time.Time) int {
	n := 0
	for _, ep := range eps {
		if ep.Ejected(now) {
			n++
		}
	}
	return n
}
