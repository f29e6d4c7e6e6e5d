package frontdoor

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the front door's Prometheus collectors.
type Metrics struct {
	requests *prometheus.CounterVec
	duration prometheus.Histogram
}

// NewMetrics registers the front door's collectors on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_requests_total",
			Help: "Requests handled by the router, by model and outcome (local, overflow, retry, not_found, not_allowed, no_room, bad_request, too_large, cancelled).",
		}, []string{"model", "outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "switchyard_router_request_duration_seconds",
			Help:    "Time from a request's arrival to the end of its answer.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
		}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration)
	}
	return m
}

func (m *Metrics) request(model, outcome string) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(model, outcome).Inc()
}
