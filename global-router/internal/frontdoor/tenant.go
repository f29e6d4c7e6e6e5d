package frontdoor

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/openai"
	"github.com/switchyard-dev/switchyard/contract/promlabel"
	"github.com/switchyard-dev/switchyard/contract/ratelimit"
)

// Tenants is the tenant directory the front door charges requests to (the config store's view,
// adapted by the app). It must be safe for concurrent use.
type Tenants interface {
	// HasAPIKeys reports whether any tenant has an API key: then every request must present one.
	HasAPIKeys() bool
	// ByKeyDigest returns the tenant of the API key with SHA-256 digest d.
	ByKeyDigest(d [32]byte) (string, bool)
	// Limits returns tenant's limits; configured is false for a tenant with none stored, and
	// unreadable true when its stored value cannot be read.
	Limits(tenant string) (lim ratelimit.Limits, configured, unreadable bool)
}

// tenantOf identifies the tenant of r. With API keys configured the tenant is the key's
// (Authorization: Bearer <key>): the client's tenant header is overwritten with it and the
// Authorization header, the router's credential, is not forwarded; a missing or unknown key is
// a 401. Without keys the tenant header is used as sent (a trusted proxy in front must set it).
func (s *Server) tenantOf(r *http.Request) (string, *openai.Error) {
	if s.cfg.Tenants == nil {
		return "", nil
	}
	if !s.cfg.Tenants.HasAPIKeys() {
		return r.Header.Get(contract.HeaderTenant), nil
	}
	key, ok := bearer(r.Header.Get("Authorization"))
	var name string
	if ok {
		name, ok = s.cfg.Tenants.ByKeyDigest(sha256.Sum256([]byte(key)))
	}
	if !ok {
		s.metrics.refusedTenant("", refusedAPIKey)
		s.log.Debug("request refused: missing or unknown API key", "reason", contract.ReasonInvalidAPIKey)
		return "", invalidAPIKey()
	}
	r.Header.Del("Authorization")
	r.Header.Del(contract.HeaderFairnessID)
	r.Header.Set(contract.HeaderTenant, name)
	return name, nil
}

// bearer returns the token of an Authorization header value "Bearer <token>".
func bearer(v string) (string, bool) {
	const prefix = "bearer "
	if len(v) <= len(prefix) || !strings.EqualFold(v[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(v[len(prefix):]), true
}

// admitTenant charges a request of tenant to its limits, reserving its input estimate plus its
// output bound; it returns the lease to finish when the request ends (nil for a tenant without
// limits) or the refusal to answer.
func (s *Server) admitTenant(tenant string, b *openai.Body) (*ratelimit.Lease, *openai.Error) {
	if s.cfg.Tenants == nil || s.cfg.Limiter == nil {
		return nil, nil
	}
	lim, configured, unreadable := s.cfg.Tenants.Limits(tenant)
	switch {
	case unreadable:
		s.metrics.refusedTenant(tenant, refusedUnavailable)
		s.log.Warn("request refused: the tenant's stored limits cannot be read", "tenant", tenant)
		return nil, tenantUnavailable(tenant)
	case !configured:
		return nil, nil
	}
	lease, ref := s.cfg.Limiter.Admit(tenant, lim, reserveOf(b))
	if ref != nil {
		s.metrics.refusedTenant(tenant, ref.Limit)
		s.log.Debug(
			"request refused: tenant over its limit",
			"tenant",
			tenant,
			"limit",
			ref.Limit,
			"retry_after",
			ref.RetryAfter,
		)
		return nil, rateLimited(tenant, ref)
	}
	return lease, nil
}

// finishLease ends a tenant's request: one no cluster answered is charged nothing, one whose
// usage was reported is charged it, and any other stays charged its reservation.
func finishLease(lease *ratelimit.Lease, used int64, reported, answered bool) {
	switch {
	case !answered:
		lease.Refund()
	case reported:
		lease.Finish(used)
	default:
		lease.Finish(ratelimit.UsageUnknown)
	}
}

// reserveOf is a request's token reservation: its prompt (about four bytes a token, plus
// prompt token ids) and its output bound (max_tokens).
func reserveOf(b *openai.Body) int64 {
	return int64(b.PromptBytes/4+b.PromptTokenIDs) + int64(b.MaxTokens)
}

// What else than a limit refuses a tenant's request (the limit label of the refusal counter).
const (
	refusedAPIKey      = "invalid_api_key"
	refusedUnavailable = "unavailable"
)

func rateLimited(tenant string, ref *ratelimit.Refusal) *openai.Error {
	return &openai.Error{
		Status:            http.StatusTooManyRequests,
		Type:              openai.TypeRateLimit,
		Code:              contract.ReasonRateLimitExceeded,
		RetryAfterSeconds: max(openai.RetryAfter(ref.RetryAfter), 1),
		Message: fmt.Sprintf(
			"tenant `%s` is over its %s limit; retry after %v",
			tenant,
			ref.Limit,
			ref.RetryAfter.Round(1e6),
		),
	}
}

func invalidAPIKey() *openai.Error {
	return &openai.Error{
		Status:  http.StatusUnauthorized,
		Type:    openai.TypeInvalidRequest,
		Code:    contract.ReasonInvalidAPIKey,
		Message: "Incorrect or missing API key: send Authorization: Bearer <key>.",
	}
}

func tenantUnavailable(tenant string) *openai.Error {
	return &openai.Error{
		Status:            http.StatusServiceUnavailable,
		Type:              openai.TypeServiceUnavailable,
		Code:              contract.ReasonTenantUnavailable,
		RetryAfterSeconds: 30,
		Message: fmt.Sprintf(
			"the limits of tenant `%s` cannot be read; its requests are refused until an operator fixes them",
			tenant,
		),
	}
}

// tenantMetrics counts the refusals of tenants' requests, the streams asked for usage and the
// answers whose usage was not read.
type tenantMetrics struct {
	refused    *prometheus.CounterVec
	usageAsked *prometheus.CounterVec
	tenants    *promlabel.Set
	unmetered  *prometheus.CounterVec
}

// Outcomes of asking a stream for its usage chunk (the outcome label of usage_asked_total).
const (
	usageAsked       = "asked"
	usageBudgetSpent = "body_budget"
)

func newTenantMetrics() tenantMetrics {
	asked := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_router_tenant_stream_usage_asked_total",
		Help: "Streams of tenants with a token limit whose client did not ask for the usage chunk, by outcome: asked " +
			"(forwarded with stream_options.include_usage, the chunk dropped from the client's stream) or body_budget (the " +
			"in-flight body budget was spent: forwarded as sent, charged the reservation).",
	}, []string{"outcome"})
	for _, o := range []string{usageAsked, usageBudgetSpent} {
		asked.WithLabelValues(o)
	}
	return tenantMetrics{
		usageAsked: asked,
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_tenant_refused_total",
			Help: "Requests refused for their tenant, by tenant (configured tenants, at most 500; else other) and limit: " +
				"tokens_per_minute, requests_per_second, max_concurrent (429 rate_limit_exceeded), invalid_api_key (401), " +
				"unavailable (503, the tenant's stored limits cannot be read).",
		}, []string{"tenant", "limit"}),
		tenants: promlabel.NewSet(promlabel.DefaultLimit),
		unmetered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_response_unmetered_total",
			Help: "Answers to tenants with limits passed on without reading their usage (the reservation stays charged), by " +
				"reason: too_large (a JSON body or an SSE line over 1 MiB) or budget (the in-flight body budget " +
				"--max-inflight-body-bytes, which the buffered answer is charged to, was spent).",
		}, []string{"reason"}),
	}
}

// unmeteredAnswer counts an answer whose usage was not read, and why.
func (m *Metrics) unmeteredAnswer(reason string) {
	if m != nil {
		m.tenant.unmetered.WithLabelValues(reason).Inc()
	}
}

// refusedTenant counts one refusal; tenant is "" when unknown.
func (m *Metrics) refusedTenant(tenant, limit string) {
	label := promlabel.Other
	if tenant != "" {
		label = m.tenant.tenants.Value(tenant)
	}
	m.tenant.refused.WithLabelValues(label, limit).Inc()
}
