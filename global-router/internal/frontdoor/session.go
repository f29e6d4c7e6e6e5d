package frontdoor

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/openai"
	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

// Session outcomes: the outcome label of switchyard_router_session_decisions_total.
const (
	sessionStuck = "stuck" // served by the cluster that served the session last
	sessionMoved = "moved" // served elsewhere (that cluster had no room, was drained, or far slower)
	sessionNew   = "new"   // the session was not known
)

// session is a request's session: its key in the router's table and the cluster that served it
// last ("" for none). The zero value is a request without a session.
type session struct {
	key     uint64
	ok      bool
	cluster string
}

// sessionOf reads r's session id, the configured header's (over the body's metadata.session_id
// or user), and looks it up. A header over contract.MaxSessionID bytes or with a control
// character is a 400 naming the header.
func (s *Server) sessionOf(r *http.Request, bodyID []byte) (session, *openai.Error) {
	id := ""
	if h := s.cfg.SessionHeader; h != "" {
		v, err := contract.ParseSessionID(h, r.Header.Get(h))
		if err != nil {
			s.log.Info("request refused: invalid header", "header", h, "err", err)
			return session{}, badRequest(err.Error(), h)
		}
		id = v
	}
	if id == "" && len(bodyID) > 0 {
		id = string(bodyID)
	}
	if id == "" || s.cfg.Options.SessionSlack < 0 {
		return session{}, nil
	}
	tenant := r.Header.Get(contract.HeaderTenant)
	if tenant == "" {
		tenant = r.Header.Get(contract.HeaderFairnessID)
	}
	sess := session{key: s.sessions.Key(tenant, id), ok: true}
	sess.cluster, _ = s.sessions.Lookup(sess.key, time.Now())
	return sess, nil
}

// served records that cluster (the answer's x-switchyard-cluster) served sess, and counts where
// it went.
func (s *Server) served(sess session, cluster string) {
	if !sess.ok || cluster == "" {
		return
	}
	s.sessions.Record(sess.key, cluster, time.Now())
	outcome := sessionNew
	switch sess.cluster {
	case "":
	case cluster:
		outcome = sessionStuck
	default:
		outcome = sessionMoved
	}
	s.metrics.sessions.WithLabelValues(outcome).Inc()
}

// sessionWriter records its session as served by the answer's cluster (x-switchyard-cluster)
// when a 2xx answer's headers are written, once.
type sessionWriter struct {
	http.ResponseWriter
	s        *Server
	sess     session
	recorded bool
}

func (w *sessionWriter) WriteHeader(code int) {
	if !w.recorded && code/100 == 2 {
		w.recorded = true
		w.s.served(w.sess, w.Header().Get(contract.HeaderCluster))
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (Flush, deadlines).
func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sessionMetrics are the collectors of the router's session table: its size read when gathered
// from the table the front door uses (none before New), and the decisions by outcome.
type sessionMetrics struct {
	table atomic.Pointer[routing.Sessions]
}

func (m *sessionMetrics) collectors(decisions *prometheus.CounterVec) []prometheus.Collector {
	size := func(bytes bool) func() float64 {
		return func() float64 {
			t := m.table.Load()
			if t == nil {
				return 0
			}
			n, b := t.Size()
			if bytes {
				return float64(b)
			}
			return float64(n)
		}
	}
	evicted := func(expired bool) func() float64 {
		return func() float64 {
			t := m.table.Load()
			if t == nil {
				return 0
			}
			c, e := t.Evictions()
			if expired {
				return float64(e)
			}
			return float64(c)
		}
	}
	const evictHelp = "Sessions the router's session table dropped, by reason: capacity (full) or expired " +
		"(idle for the TTL)."
	return []prometheus.Collector{
		decisions,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchyard_router_sessions",
			Help: "Sessions the router's session-affinity table remembers now."}, size(false)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchyard_router_session_bytes",
			Help: "Memory the router's session-affinity table is charged (bounded)."}, size(true)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "switchyard_router_session_evictions_total", Help: evictHelp,
			ConstLabels: prometheus.Labels{"reason": "capacity"}}, evicted(false)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "switchyard_router_session_evictions_total", Help: evictHelp,
			ConstLabels: prometheus.Labels{"reason": "expired"}}, evicted(true)),
	}
}
