package dnssync

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the sync's collectors.
type metrics struct {
	errors      *prometheus.CounterVec
	changes     *prometheus.CounterVec
	lastSuccess prometheus.Gauge
	records     prometheus.Gauge
	leader      prometheus.Gauge
}

// newMetrics creates the collectors and registers them on reg (nothing when reg is nil).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_dnssync_errors_total",
			Help: "Failed reconciliations of the Route 53 records, by kind (throttled, failed).",
		}, []string{"kind"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_dnssync_changes_total",
			Help: "Record changes applied to Route 53, by action (UPSERT, DELETE).",
		}, []string{"action"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchyard_router_dnssync_last_success_timestamp_seconds",
			Help: "Unix time of the last successful reconciliation (0: none yet).",
		}),
		records: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchyard_router_dnssync_records",
			Help: "Latency records the sync manages and has published, as of the last successful reconciliation.",
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchyard_router_dnssync_leader",
			Help: "1 while this router leads the DNS sync and writes Route 53, else 0.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.errors, m.changes, m.lastSuccess, m.records, m.leader} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("dnssync: register metrics: %w", err)
		}
	}
	return m, nil
}
