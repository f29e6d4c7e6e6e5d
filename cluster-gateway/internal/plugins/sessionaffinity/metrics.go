package sessionaffinity

import "github.com/prometheus/client_golang/prometheus"

// descs are the scorer's metrics, read from its table when gathered; every series carries the
// plugin's instance name (label plugin), so two instances in one config register side by side.
type descs struct {
	sessions, bytes, evictions, decisions *prometheus.Desc
}

func newDescs(name string) descs {
	l := prometheus.Labels{"plugin": name}
	return descs{
		sessions: prometheus.NewDesc("switchyard_gateway_session_affinity_sessions",
			"Sessions the session-affinity-scorer remembers now (bounded by maxSessions).", nil, l),
		bytes: prometheus.NewDesc("switchyard_gateway_session_affinity_bytes",
			"Memory the session-affinity-scorer's sessions are charged (bounded by maxBytes).", nil, l),
		evictions: prometheus.NewDesc("switchyard_gateway_session_affinity_evictions_total",
			"Sessions the session-affinity-scorer dropped, by reason: capacity (its table was full), expired (idle for the "+
				"TTL), endpoint_removed (the pod left the pool).", []string{"reason"}, l),
		decisions: prometheus.NewDesc("switchyard_gateway_session_affinity_decisions_total",
			"Requests with a session id by where they went: stuck (where the session was served last), moved (elsewhere: "+
				"that pod was saturated, gone or outscored) or new (the session was not known).", []string{"outcome"}, l),
	}
}

// Describe implements prometheus.Collector; the scheduler registers the scorer on its registerer.
func (s *Scorer) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.desc.sessions
	ch <- s.desc.bytes
	ch <- s.desc.evictions
	ch <- s.desc.decisions
}

// Collect implements prometheus.Collector.
func (s *Scorer) Collect(ch chan<- prometheus.Metric) {
	n, b := s.sessions.Size()
	ch <- prometheus.MustNewConstMetric(s.desc.sessions, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(s.desc.bytes, prometheus.GaugeValue, float64(b))
	ev := s.sessions.Evictions()
	for _, e := range []struct {
		reason string
		n      uint64
	}{{"capacity", ev.Capacity}, {"expired", ev.Expired}, {"endpoint_removed", ev.Removed}} {
		ch <- prometheus.MustNewConstMetric(s.desc.evictions, prometheus.CounterValue, float64(e.n), e.reason)
	}
	for i, name := range outcomeNames {
		ch <- prometheus.MustNewConstMetric(s.desc.decisions, prometheus.CounterValue, float64(s.counts[i].Load()), name)
	}
}
