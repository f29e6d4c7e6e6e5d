package dnsserver

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the responder's collectors.
type metrics struct {
	responses *prometheus.CounterVec
	answers   *prometheus.CounterVec
	failovers prometheus.Counter
}

// newMetrics creates the collectors and registers them on reg (nothing when reg is nil).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		responses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_dns_responses_total",
			Help: "DNS responses sent, by response code (NOERROR, NXDOMAIN, REFUSED, FORMERR, NOTIMP).",
		}, []string{"rcode"}),
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_dns_answers_total",
			Help: "Answers with router addresses, by the region answered.",
		}, []string{"region"}),
		failovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_router_dns_failovers_total",
			Help: "Answers that sent a client to a region other than its own because its own was drained or not ready.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.responses, m.answers, m.failovers} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("dnsserver: register metrics: %w", err)
		}
	}
	return m, nil
}
