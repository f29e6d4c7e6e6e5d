package discovery

import "github.com/prometheus/client_golang/prometheus"

// sourceMetrics count a discovery source's updates and errors, labelled with the source kind.
type sourceMetrics struct {
	syncs  prometheus.Counter
	errors prometheus.Counter
}

// newSourceMetrics registers the counters for source on reg (nothing when reg is nil).
func newSourceMetrics(source string, reg prometheus.Registerer) *sourceMetrics {
	labels := prometheus.Labels{"source": source}
	m := &sourceMetrics{
		syncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "switchyard_gateway_discovery_syncs_total",
			Help:        "Endpoint sets published to the datastore by a discovery source.",
			ConstLabels: labels,
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "switchyard_gateway_discovery_errors_total",
			Help:        "Discovery updates rejected (unreadable or invalid input); the last good set is kept.",
			ConstLabels: labels,
		}),
	}
	if reg != nil {
		reg.MustRegister(m.syncs, m.errors)
	}
	return m
}
