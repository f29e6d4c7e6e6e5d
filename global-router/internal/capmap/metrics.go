package capmap

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons a request to the map is refused: the reason label of
// switchyard_router_capacity_map_refused_total.
const (
	reasonUnauthenticated = "unauthenticated"
	reasonCrossOrigin     = "cross_origin"
	reasonLoginRate       = "login_rate"
	reasonBadRequest      = "bad_request"
	reasonTooManyStreams  = "too_many_streams"
	reasonNotFound        = "not_found"
	reasonMethod          = "method_not_allowed"
)

// Results of a login: the result label of switchyard_router_capacity_map_logins_total.
const (
	loginOK      = "ok"
	loginRefused = "refused"
)

// Why an event stream ended: the reason label of switchyard_router_capacity_map_stream_ends_total.
const (
	endClientGone  = "client_gone"
	endWriteFailed = "write_failed"
	endSession     = "session_ended"
	endMaxDuration = "max_duration"
	endShutdown    = "shutdown"
)

// metrics are the map's collectors; every label takes only the constants above.
type metrics struct {
	refused *prometheus.CounterVec
	logins  *prometheus.CounterVec
	ended   *prometheus.CounterVec
	streams prometheus.Gauge
}

// newMetrics creates the collectors and registers them on reg (nothing when reg is nil),
// with gauges of s's sessions.
func newMetrics(reg prometheus.Registerer, s *Server) (*metrics, error) {
	m := &metrics{
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_capacity_map_refused_total",
			Help: "Capacity map requests refused, by reason: unauthenticated (no live session), cross_origin (a login " +
				"or logout from another origin), login_rate (too many login attempts), bad_request (an unreadable login " +
				"form), too_many_streams (every event stream slot taken), not_found, method_not_allowed.",
		}, []string{"reason"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_capacity_map_logins_total",
			Help: "Capacity map logins by result: ok (a session opened) or refused (not an accepted admin token).",
		}, []string{"result"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_capacity_map_stream_ends_total",
			Help: "Capacity map event streams ended, by reason: client_gone, write_failed (a write missed its deadline: " +
				"a slow or stuck browser), session_ended (logged out, expired, or its token rotated out), max_duration, " +
				"shutdown.",
		}, []string{"reason"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchyard_router_capacity_map_streams",
			Help: "Capacity map event streams open now (at most --capacity-map-max-streams).",
		}),
	}
	for _, r := range []string{reasonUnauthenticated, reasonCrossOrigin, reasonLoginRate, reasonBadRequest,
		reasonTooManyStreams, reasonNotFound, reasonMethod} {
		m.refused.WithLabelValues(r)
	}
	for _, r := range []string{loginOK, loginRefused} {
		m.logins.WithLabelValues(r)
	}
	for _, r := range []string{endClientGone, endWriteFailed, endSession, endMaxDuration, endShutdown} {
		m.ended.WithLabelValues(r)
	}
	if reg == nil {
		return m, nil
	}
	sessions := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "switchyard_router_capacity_map_sessions",
		Help: "Capacity map login sessions kept now.",
	}, func() float64 { n, _ := s.sessions.count(); return float64(n) })
	evicted := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "switchyard_router_capacity_map_sessions_evicted_total",
		Help: "Capacity map sessions dropped before they expired to make room for a new login.",
	}, func() float64 { _, n := s.sessions.count(); return float64(n) })
	for _, c := range []prometheus.Collector{m.refused, m.logins, m.ended, m.streams, sessions, evicted} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("capmap: register metrics: %w", err)
		}
	}
	return m, nil
}
