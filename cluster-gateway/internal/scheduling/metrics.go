package scheduling

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Decision outcomes (label values of switchyard_gateway_scheduling_decisions_total).
const (
	outcomeOK           = "ok"
	outcomeUnknownModel = "unknown_model"
	outcomeNoEndpoints  = "no_endpoints"
	outcomeSaturated    = "saturated"
)

// metrics are the scheduler's collectors.
type metrics struct {
	latency   prometheus.Observer
	picks     *prometheus.CounterVec
	decisions *prometheus.CounterVec
	outcomes  map[error]prometheus.Counter
	ok        prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, profile string) *metrics {
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "switchyard_gateway_scheduling_duration_seconds",
		Help:    "Time to make one scheduling decision (filters, scorers, picker).",
		Buckets: prometheus.ExponentialBuckets(1e-6, 2, 16),
	}, []string{"profile"})
	m := &metrics{
		latency: lat.WithLabelValues(profile),
		picks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_scheduling_picks_total",
			Help: "Requests scheduled to each endpoint (first choice).",
		}, []string{"endpoint"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_scheduling_decisions_total",
			Help: "Scheduling decisions by outcome: ok, unknown_model, no_endpoints, saturated.",
		}, []string{"outcome"}),
	}
	m.ok = m.decisions.WithLabelValues(outcomeOK)
	m.outcomes = map[error]prometheus.Counter{
		ErrUnknownModel: m.decisions.WithLabelValues(outcomeUnknownModel),
		ErrNoEndpoints:  m.decisions.WithLabelValues(outcomeNoEndpoints),
		ErrSaturated:    m.decisions.WithLabelValues(outcomeSaturated),
	}
	if reg != nil {
		reg.MustRegister(lat, m.picks, m.decisions)
	}
	return m
}

// forget drops the per-endpoint series of a removed endpoint.
func (m *metrics) forget(addr string) { m.picks.DeleteLabelValues(addr) }
