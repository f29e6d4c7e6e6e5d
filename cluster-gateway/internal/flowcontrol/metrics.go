package flowcontrol

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	size     *prometheus.GaugeVec
	outcomes *prometheus.CounterVec
	wait     prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		size: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchyard_gateway_flow_queue_requests",
			Help: "Requests waiting in the flow-control queue, by priority band.",
		}, []string{"priority"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_flow_outcomes_total",
			Help: "Requests by flow-control outcome: saturated ones dispatched, error, expired, evicted, rejected or cancelled; handed_back, any a router offered to take elsewhere and got back.",
		}, []string{"outcome"}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "switchyard_gateway_flow_queue_wait_seconds",
			Help:    "Time requests spent in the flow-control queue.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.size, m.outcomes, m.wait} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *metrics) queued(priority int, delta float64) {
	m.size.WithLabelValues(strconv.Itoa(priority)).Add(delta)
}

func (m *metrics) outcome(label string) { m.outcomes.WithLabelValues(label).Inc() }
