package frontdoor

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/promlabel"
	"github.com/switchyard-dev/switchyard/contract/usagemeter"
)

// Metrics are the front door's Prometheus collectors. The model label of requests_total takes
// only models a fresh cluster lists, at most promlabel.DefaultLimit of them; every other name
// (unknown, malformed, past the cap, or no model at all) is counted as promlabel.Other, so a
// client cannot grow the series by inventing names.
type Metrics struct {
	requests *prometheus.CounterVec
	duration prometheus.Histogram
	overflow *prometheus.CounterVec
	left     *prometheus.CounterVec
	// unavailable counts requests refused for want of a policy in force, by reason.
	unavailable *prometheus.CounterVec
	// unloadedLocal counts decisions kept in the region while policies are not loaded.
	unloadedLocal prometheus.Counter
	// noRoute counts requests for a path the front door does not serve (404) or with a method
	// the path is not served with (405), by status.
	noRoute *prometheus.CounterVec
	models  *promlabel.Set
	tenant  tenantMetrics
	// sessions counts requests with a session by where they were served (stuck, moved, new);
	// table is the session table the gauges read.
	sessions *prometheus.CounterVec
	table    sessionMetrics
}

// NewMetrics registers the front door's collectors on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_requests_total",
			Help: "Requests handled by the router, by model and outcome (local, overflow, retry, not_found, not_allowed, " +
				"policy_unavailable, no_room, bad_request, too_large, body_budget, cancelled, truncated); body_budget: the " +
				"in-flight body budget (--max-inflight-body-bytes) was spent, 503; truncated: the answer started and its body " +
				"from the gateway broke.",
		}, []string{"model", "outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "switchyard_router_request_duration_seconds",
			Help:    "Time from a request's arrival to the end of its answer.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
		}),
		overflow: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_overflow_answered_total",
			Help: "Requests answered by a cluster outside the router's region, by how that cluster ranked in the router's " +
				"estimates at decision time: best (lowest estimated TTFT), near_best (within the near-best window) or other.",
		}, []string{"choice"}),
		left: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_overflow_reason_total",
			Help: "Routing decisions that sent a request out of the router's region, by why no local cluster kept them: " +
				"past_throughput (this router's streams queue there for a first token), remote_sooner (busy, and elsewhere " +
				"LocalPreference times sooner), over_threshold, unavailable (drained, stale, unhealthy, saturated), no_local " +
				"(none serves the model).",
		}, []string{"reason"}),
		unavailable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_policy_unavailable_total",
			Help: "Requests refused (503 policy_unavailable) because no routing policy was in force for their model: " +
				"not_loaded (the router has not loaded its policies yet) or undecodable (the model's stored policy cannot be " +
				"read).",
		}, []string{"reason"}),
		unloadedLocal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_router_policy_unloaded_local_decisions_total",
			Help: "Routing decisions kept in the router's region because the policies were not loaded yet " +
				"(--policy-unavailable=local); a retry decides again.",
		}),
		noRoute: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_no_route_requests_total",
			Help: "Requests refused because the router serves no such route, by status: 404 (unknown path) or 405 (a path " +
				"served with another method).",
		}, []string{"code"}),
		models: promlabel.NewSet(promlabel.DefaultLimit),
		tenant: newTenantMetrics(),
		sessions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_session_decisions_total",
			Help: "Requests with a session id by where they were served: stuck (the cluster that served the session " +
				"last), moved (another: that one had no room, was drained or far slower) or new (the session was not known).",
		}, []string{"outcome"}),
	}
	for _, o := range []string{sessionStuck, sessionMoved, sessionNew} {
		m.sessions.WithLabelValues(o)
	}
	for _, c := range []int{http.StatusNotFound, http.StatusMethodNotAllowed} {
		m.noRoute.WithLabelValues(strconv.Itoa(c))
	}
	for _, c := range []string{landedBest, landedNearBest, landedOther} {
		m.overflow.WithLabelValues(c)
	}
	for _, r := range contract.Reasons(contract.UseLeftRegion) {
		m.left.WithLabelValues(r.String())
	}
	for _, r := range contract.Reasons(contract.UsePolicy) {
		m.unavailable.WithLabelValues(r.String())
	}
	for _, r := range usagemeter.Reasons {
		m.tenant.unmetered.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(
			m.requests,
			m.duration,
			m.overflow,
			m.left,
			m.unavailable,
			m.unloadedLocal,
			m.noRoute,
			m.tenant.refused,
			m.tenant.unmetered,
			m.tenant.usageAsked,
		)
		reg.MustRegister(m.table.collectors(m.sessions)...)
	}
	return m
}

// request counts a request for model ("" when it is not one a fresh cluster lists) by outcome.
func (m *Metrics) request(model, outcome string) {
	if m == nil {
		return
	}
	label := promlabel.Other
	if model != "" {
		label = m.models.Value(model)
	}
	m.requests.WithLabelValues(label, outcome).Inc()
}

// unrouted counts a request refused for want of a route, with status 404 or 405.
func (m *Metrics) unrouted(status int) {
	if m == nil {
		return
	}
	if status != http.StatusMethodNotAllowed {
		status = http.StatusNotFound
	}
	m.noRoute.WithLabelValues(strconv.Itoa(status)).Inc()
}

// RegisterBodyBudget registers the gauges of the in-flight body budget on reg: the bytes
// reserved now and the budget's size.
func RegisterBodyBudget(reg prometheus.Registerer, budget *body.Budget) error {
	for _, g := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "switchyard_router_inflight_body_bytes",
			Help: "Bytes of request-body buffers held now, reserved from the in-flight body budget.",
		}, func() float64 { return float64(budget.InUse()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "switchyard_router_inflight_body_budget_bytes",
			Help: "The in-flight request body budget (--max-inflight-body-bytes): beyond it bodies are refused with 503.",
		}, func() float64 { return float64(budget.Limit()) }),
	} {
		if err := reg.Register(g); err != nil {
			return err
		}
	}
	return nil
}
