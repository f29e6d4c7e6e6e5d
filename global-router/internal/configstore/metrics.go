package configstore

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the store's collectors.
type metrics struct {
	reloads       prometheus.Counter
	events        prometheus.Counter
	invalid       prometheus.Counter
	writes        *prometheus.CounterVec
	revision      prometheus.Gauge
	policies      prometheus.Gauge
	registrations prometheus.Gauge
	// invalidRegistrations counts the stored registration values that cannot be read.
	invalidRegistrations prometheus.Gauge
	unreadable           prometheus.Gauge
	lastApplied          prometheus.Gauge
}

// newMetrics creates the collectors and registers them on reg (nothing when reg is nil).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		reloads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_router_config_reloads_total",
			Help: "Times the config watch was interrupted (compaction, watch error, etcd away) and everything was loaded again.",
		}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_router_config_events_total",
			Help: "Config changes applied from the etcd watch.",
		}),
		invalid: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_router_config_invalid_values_total",
			Help: "Stored policy and registration values that failed to decode or validate; an unreadable policy makes its " +
				"model refused, an invalid registration its cluster's summaries rejected, until the value is replaced or " +
				"deleted.",
		}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_config_writes_total",
			Help: "Config writes by operation and result (ok, conflict, error).",
		}, []string{"op", "result"}),
		revision: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchyard_router_config_revision",
			Help: "etcd revision of the config view in force.",
		}),
		policies: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchyard_router_config_policies",
			Help: "Model policies in the config view in force.",
		}),
		unreadable: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchyard_router_config_unreadable_policies",
			Help: "Stored policy values in the config view in force that cannot be read; their models are refused.",
		}),
		registrations: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchyard_router_config_registrations",
			Help: "Cluster registrations in the config view in force.",
		}),
		invalidRegistrations: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchyard_router_config_invalid_registrations",
			Help: "Stored cluster registration values in the config view in force that cannot be read; their clusters' " +
				"summaries are rejected.",
		}),
		lastApplied: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchyard_router_config_last_change_timestamp_seconds",
			Help: "Unix time at which the last config change from the watch was applied.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.reloads, m.events, m.invalid, m.writes, m.revision, m.policies,
		m.registrations, m.invalidRegistrations, m.unreadable, m.lastApplied} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("configstore: register metrics: %w", err)
		}
	}
	return m, nil
}

// write counts one write.
func (m *metrics) write(op, result string) { m.writes.WithLabelValues(op, result).Inc() }
