package forward

import "github.com/prometheus/client_golang/prometheus"

// Attempt results counted by Metrics.
const (
	attemptAnswered   = "answered"    // an answer passed on to the client, whatever its status
	attemptRefused    = "refused"     // 503, 502 or 429 with x-switchyard-overflow: the next candidate is tried
	attemptError      = "error"       // no answer: connect error, reset, ping timeout
	attemptAbandoned  = "abandoned"   // the client went away before the answer
	attemptHandedBack = "handed_back" // 429 with x-switchyard-overflow to an attempt offering to go elsewhere (Target.HandBack)
)

// Metrics counts the forwarder's attempts per cluster; it is an Observer, to be combined with the
// cluster table's with Observers. Safe for concurrent use.
type Metrics struct {
	attempts *prometheus.CounterVec
}

// NewMetrics registers the forwarder's collectors on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_router_attempts_total",
		Help: "Attempts to forward a request to a cluster's gateway, by cluster and result (answered, refused: tried the next candidate, error: no answer, abandoned: the client went away first, handed_back: the gateway gave back a request the router offered to take elsewhere).",
	}, []string{"cluster", "result"})}
	if reg != nil {
		reg.MustRegister(m.attempts)
	}
	return m
}

// Observe counts o.
func (m *Metrics) Observe(o Outcome) {
	result := attemptAnswered
	switch {
	case o.Abandoned:
		result = attemptAbandoned
	case o.Status == 0:
		result = attemptError
	case o.Retried && handedBack(o.Target, o.Status):
		result = attemptHandedBack
	case o.Retried:
		result = attemptRefused
	}
	m.attempts.WithLabelValues(o.Target.Cluster, result).Inc()
}

// Observers passes every outcome to each of its members in order.
type Observers []Observer

// Observe passes o on.
func (os Observers) Observe(o Outcome) {
	for _, x := range os {
		x.Observe(o)
	}
}

var (
	_ FirstTokener = Observers(nil)
	_ Dispatcher   = Observers(nil)
)

// Dispatched passes the start of an attempt on to the members that want it.
func (os Observers) Dispatched(t Target) {
	for _, x := range os {
		if d, ok := x.(Dispatcher); ok {
			d.Dispatched(t)
		}
	}
}

// FirstToken passes the first token of t's stream on to the members that want it.
func (os Observers) FirstToken(t Target) {
	for _, x := range os {
		if ft, ok := x.(FirstTokener); ok {
			ft.FirstToken(t)
		}
	}
}
