package tenantlimits

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract/promlabel"
)

// Metrics are the enforcer's collectors.
type Metrics struct {
	refusedTotal *prometheus.CounterVec
	reloadErrors prometheus.Counter
	tenants      prometheus.Gauge
	names        *promlabel.Set
}

func newMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		refusedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_tenant_refused_total",
			Help: "Requests refused 429 rate_limit_exceeded for their tenant's limits (--tenant-limits-file), by tenant (a " +
				"tenant the file lists, at most 500, or * for the others; else other) and limit: tokens_per_minute, " +
				"requests_per_second, max_concurrent.",
		}, []string{"tenant", "limit"}),
		reloadErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_gateway_tenant_limits_reload_errors_total",
			Help: "Re-reads of the tenant limits file that failed (unreadable or invalid); the limits in force were kept.",
		}),
		tenants: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchyard_gateway_tenant_limits_tenants",
			Help: "Entries of the tenant limits file in force.",
		}),
		names: promlabel.NewSet(promlabel.DefaultLimit),
	}
	if reg != nil {
		reg.MustRegister(m.refusedTotal, m.reloadErrors, m.tenants)
	}
	return m
}

// refused counts one refusal of a request charged to key.
func (m *Metrics) refused(key, limit string) {
	m.refusedTotal.WithLabelValues(m.names.Value(key), limit).Inc()
}
