package flowcontrol

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/promlabel"
)

// maxPriorityLabels caps the priority label's values beyond the configured priorities: a client
// picks its priority header, and every distinct one would otherwise be a gauge series forever.
const maxPriorityLabels = 32

type metrics struct {
	size     *prometheus.GaugeVec
	outcomes *prometheus.CounterVec
	wait     prometheus.Histogram
	bands    *promlabel.Set // the priority label's values
}

// newMetrics creates the collectors; the priority label always has room for the configured
// priorities (cfg's default and objective priorities).
func newMetrics(reg prometheus.Registerer, cfg Config) (*metrics, error) {
	m := &metrics{
		size: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchyard_gateway_flow_queue_requests",
			Help: "Requests waiting in the flow-control queue, by priority band.",
		}, []string{"priority"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_flow_outcomes_total",
			Help: "Requests by flow-control outcome: saturated ones dispatched, error, expired, evicted, rejected or " +
				"cancelled; handed_back, any a router offered to take elsewhere and got back.",
		}, []string{"outcome"}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "switchyard_gateway_flow_queue_wait_seconds",
			Help:    "Time requests spent in the flow-control queue.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
	}
	preset := []string{strconv.Itoa(cfg.DefaultPriority)}
	for _, p := range cfg.ObjectivePriorities {
		preset = append(preset, strconv.Itoa(p))
	}
	m.bands = promlabel.NewSet(maxPriorityLabels, preset...)
	if reg != nil {
		for _, c := range []prometheus.Collector{m.size, m.outcomes, m.wait} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// sizeGauge returns the queue-size series of a request of the given priority (its priority
// label bounded by bands); the queue keeps it with the request, so the gauge is lowered under
// the label it was raised under.
func (m *metrics) sizeGauge(priority int) prometheus.Gauge {
	return m.size.WithLabelValues(m.bands.Value(strconv.Itoa(priority)))
}

func (m *metrics) outcome(r contract.Reason) { m.outcomes.WithLabelValues(r.String()).Inc() }
