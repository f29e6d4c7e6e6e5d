package forward

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract/promlabel"
)

// Attempt results counted by Metrics.
const (
	attemptAnswered   = "answered"    // an answer passed on to the client, whatever its status
	attemptRefused    = "refused"     // 503, 502 or 429 with x-switchyard-overflow: the next candidate is tried
	attemptError      = "error"       // no answer: connect error, reset, ping timeout
	attemptAbandoned  = "abandoned"   // the client went away before the answer
	attemptHandedBack = "handed_back" // 429 with x-switchyard-overflow to an attempt offering elsewhere (Target.HandBack)
)

// Metrics counts the forwarder's attempts per cluster and compares the router's estimates with
// the times to first token it measures; it is an Observer, to be combined with the cluster
// table's with Observers. Safe for concurrent use.
//
// The cluster label takes the names of the clusters the router forwards to, which gossip
// reports: at most promlabel.DefaultLimit of them over the process's life, the rest (and any
// name that is not a valid label value) counted as promlabel.Other.
type Metrics struct {
	attempts  *prometheus.CounterVec
	estimate  *prometheus.HistogramVec
	truncated *prometheus.CounterVec
	clusters  *promlabel.Set
}

// NewMetrics registers the forwarder's collectors on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_router_attempts_total",
		Help: "Attempts to forward a request to a cluster's gateway, by cluster and result (answered, refused: tried the " +
			"next candidate, error: no answer, abandoned: the client went away first, handed_back: the gateway gave back a " +
			"request the router offered to take elsewhere).",
	}, []string{"cluster", "result"}),
		estimate: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "switchyard_router_ttft_estimate_ratio",
			Help: "Time to first token measured by the router (from the attempt's start to the stream's first bytes) over its " +
				"estimate for the cluster when it decided (1 is exact; above 1, the estimate was short), by route (local, " +
				"overflow, retry).",
			Buckets: []float64{0.25, 0.5, 0.67, 0.8, 0.9, 1, 1.11, 1.25, 1.5, 2, 4},
		}, []string{"route"}),
		clusters: promlabel.NewSet(promlabel.DefaultLimit),
		truncated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_upstream_truncated_total",
			Help: "Answers aborted because the gateway's body broke after the response headers were passed on " +
				"(connection or stream closed before the end of the answer), by cluster.",
		}, []string{"cluster"})}
	if reg != nil {
		reg.MustRegister(m.attempts, m.estimate, m.truncated)
	}
	return m
}

// ObserveTTFT records t's measured time to first token against the estimate it was sent with
// (TTFTObserver); a target without an estimate is not counted.
func (m *Metrics) ObserveTTFT(t Target, ttft time.Duration) {
	if t.Estimate > 0 {
		m.estimate.WithLabelValues(t.Route).Observe(ttft.Seconds() / t.Estimate.Seconds())
	}
}

// Truncated counts an answer from t that broke after it started (Truncator).
func (m *Metrics) Truncated(t Target, _ error) {
	m.truncated.WithLabelValues(m.clusters.Value(t.Cluster)).Inc()
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
	m.attempts.WithLabelValues(m.clusters.Value(o.Target.Cluster), result).Inc()
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
	_ TTFTObserver = Observers(nil)
	_ TTFTObserver = (*Metrics)(nil)
	_ Truncator    = Observers(nil)
	_ Truncator    = (*Metrics)(nil)
)

// Truncated passes a broken answer on to the members that want it.
func (os Observers) Truncated(t Target, err error) {
	for _, x := range os {
		if tr, ok := x.(Truncator); ok {
			tr.Truncated(t, err)
		}
	}
}

// ObserveTTFT passes a stream's time to first token on to the members that want it.
func (os Observers) ObserveTTFT(t Target, ttft time.Duration) {
	for _, x := range os {
		if o, ok := x.(TTFTObserver); ok {
			o.ObserveTTFT(t, ttft)
		}
	}
}

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
