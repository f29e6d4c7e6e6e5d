// Package frontdoor is the global router's OpenAI-compatible HTTP endpoint: it reads a request's
// model and prompt, asks the routing policy for a cluster among the cluster table's candidates,
// forwards the request there (retrying on refusals), and answers OpenAI-style errors when no
// cluster can take it: 404 for a model no cluster serves, 503 with the explanation when the
// model's residency policy allows no serving cluster, 503 policy_unavailable when no policy is in
// force for the model (policies not loaded yet, or its stored value unreadable: routing fails
// closed and never falls back to the defaults, which allow every region), 429 with Retry-After
// when every allowed cluster is full after a bounded wait. Before routing, a request is charged to
// its tenant (from its API key when keys are configured, else its tenant header): 401
// invalid_api_key for a missing or unknown key, 429 rate_limit_exceeded with Retry-After over one
// of the tenant's limits.
package frontdoor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/openai"
	"github.com/switchyard-dev/switchyard/contract/ratelimit"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// Table is the cluster view the front door routes over. *clustertable.Table implements it.
type Table interface {
	// View returns the cluster view, changing nothing (a dry run uses it as it is); Claim
	// readies it for a request that will be routed over it (it may take a returning cluster's
	// probe turn); Release gives back the turns of the clusters the request does not go to
	// (used is the index of the one it goes to, -1 for none).
	View(model string, prefixHashes []uint64) []clustertable.Entry
	Claim(view []clustertable.Entry)
	Release(view []clustertable.Entry, used int)
	// Route decides a request that will be routed and returns the claimed view it decided over
	// (which may hold only the clusters that can matter) and the decision (see
	// clustertable.Table.Route); the view is Released after it as a claimed View is.
	Route(
		model string,
		prefixHashes []uint64,
		pol routing.Policy,
		req routing.Request,
		opt routing.Options,
		src rand.Source,
	) ([]clustertable.Entry, routing.Decision, error)
}

// Policies returns the routing policy of a model: the stored one, or the defaults when none is
// stored. It fails closed with an error wrapping routing.ErrPolicyNotLoaded before the policies
// have been loaded and routing.ErrPolicyUnreadable when the model's stored policy cannot be read.
// It must be safe for concurrent use.
type Policies interface {
	Policy(model string) (routing.Policy, error)
}

// Forwarder sends a request to the first target that accepts it, choosing the targets of its
// retries again with again. *forward.Forwarder implements it.
type Forwarder interface {
	Forward(w http.ResponseWriter, r *http.Request, body []byte, targets []forward.Target, again forward.Retarget) error
}

// Config tunes the front door.
type Config struct {
	// Region is the router's region.
	Region string
	// MaxBodyBytes bounds a request body; larger ones get 413. Default 32 MiB.
	MaxBodyBytes int64
	// Bodies is the in-flight body budget every request body is reserved from while the request
	// runs; when it is spent a request is answered 503 with Retry-After. Nil: no budget.
	Bodies *body.Budget
	// QueueWait bounds how long a request waits for room when every cluster is full before it is
	// answered 429. Default 2 s.
	QueueWait time.Duration
	// RetryPoll is how often a waiting request looks for room again. Default 50 ms.
	RetryPoll time.Duration
	// Delay returns simulated latency to a region (local stack); nil means none.
	Delay func(region string) time.Duration
	// Options tune the routing decision.
	Options routing.Options
	// PolicyUnavailable is what happens to a request while the routing policies are not loaded
	// yet: PolicyUnavailableRefuse (the default; any other value too) answers 503
	// policy_unavailable; PolicyUnavailableLocal routes it inside Region only
	// (routing.LocalOnlyPolicy), which violates a residency rule that excludes Region. A model
	// whose stored policy cannot be read is refused either way.
	PolicyUnavailable string
	// SessionHeader names the request header that carries a session id (over the body's
	// metadata.session_id or user); "" reads the body only. Default "x-session-id".
	SessionHeader string
	// Sessions bounds the session-affinity table (routing.DefaultSessionConfig's defaults for
	// zero fields). Options.SessionSlack < 0 turns session affinity off.
	Sessions routing.SessionConfig
	// Tracer records the request and routing-decision spans (see docs/router.md#tracing); nil
	// records none.
	Tracer *telemetry.Tracer
	// Tenants identifies each request's tenant (API keys) and holds the tenants' limits; nil:
	// no tenants, nothing limited.
	Tenants Tenants
	// Limiter enforces the tenants' limits; nil: none enforced.
	Limiter *ratelimit.Limiter
	// Passthrough are the engine paths forwarded (POST) to a cluster serving the model the
	// request names, read from a JSON body or a multipart form field (see
	// openai.PassthroughPath); any other path is a 404. Default openai.DefaultPassthroughPaths.
	Passthrough []openai.PassthroughPath
	// Outcomes receives what became of every routed request (the capacity map's decision list
	// and flows); nil: none recorded.
	Outcomes OutcomeRecorder
}

// Outcome is what became of one routed request.
type Outcome struct {
	// Time is when the outcome was known.
	Time time.Time
	// Model is the requested model when a fresh cluster lists it, else "".
	Model string
	// Cluster and Region name the cluster that answered, "" when none did.
	Cluster, Region string
	// Outcome is the request's outcome label: local, overflow, retry, or why it was not
	// answered (not_found, not_allowed, policy_unavailable, no_room, cancelled, truncated).
	Outcome string
	// LeftBecause says why an overflow left the router's region ("" otherwise).
	LeftBecause contract.Reason
}

// OutcomeRecorder receives the outcome of every routed request (past parsing and tenant
// limits), on the request's goroutine, so it must be quick and safe for concurrent use.
type OutcomeRecorder interface {
	RecordOutcome(Outcome)
}

// What a request gets while the routing policies are not loaded (Config.PolicyUnavailable).
const (
	// PolicyUnavailableRefuse refuses it: 503 policy_unavailable with Retry-After.
	PolicyUnavailableRefuse = "refuse"
	// PolicyUnavailableLocal routes it to the router's own region only.
	PolicyUnavailableLocal = "local"
)

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		MaxBodyBytes:      32 << 20,
		QueueWait:         2 * time.Second,
		RetryPoll:         50 * time.Millisecond,
		Options:           routing.DefaultOptions(),
		PolicyUnavailable: PolicyUnavailableRefuse,
		SessionHeader:     contract.HeaderSessionID,
		Sessions:          routing.DefaultSessionConfig(),
		Passthrough:       defaultPassthrough(),
	}
}

// defaultPassthrough is openai.DefaultPassthroughPaths parsed.
func defaultPassthrough() []openai.PassthroughPath {
	p, err := openai.ParsePassthroughPaths(openai.DefaultPassthroughPaths)
	if err != nil {
		panic(err)
	}
	return p
}

// Server is the front door's handler. It is safe for concurrent use.
type Server struct {
	cfg      Config
	table    Table
	policies Policies
	fwd      Forwarder
	log      *slog.Logger
	metrics  *Metrics
	sessions *routing.Sessions
	lastWarn atomic.Int64 // unix nanoseconds of the last body budget warning
}

// New returns a front door.
// m may be nil (metrics kept but not registered).
func New(cfg Config, table Table, policies Policies, fwd Forwarder, log *slog.Logger, m *Metrics) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if m == nil {
		m = NewMetrics(nil)
	}
	s := &Server{
		cfg:      cfg,
		table:    table,
		policies: policies,
		fwd:      fwd,
		log:      log,
		metrics:  m,
		sessions: routing.NewSessions(cfg.Sessions),
	}
	m.table.table.Store(s.sessions)
	return s
}

// Handler returns the HTTP handler for the OpenAI endpoints: the inference routes
// (completions, chat completions, embeddings, responses), the pass-through paths of
// Config.Passthrough and the model list. Any other request gets an OpenAI-style 404 (405 for a
// served path and another method).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, p := range openai.InferencePaths {
		mux.HandleFunc("POST "+p, s.serveInference)
	}
	for _, p := range s.cfg.Passthrough {
		h := s.servePassthrough
		if p.Model == openai.ModelForm {
			h = s.serveForm
		}
		mux.HandleFunc("POST "+p.Path, h)
	}
	mux.HandleFunc("GET "+openai.PathModels, s.serveModels)
	return openai.NoRoute(mux, s.noRoute)
}

// noRoute logs and counts a request refused for want of a route.
func (s *Server) noRoute(r *http.Request, status int) {
	s.metrics.unrouted(status)
	path := r.URL.Path
	if len(path) > maxLoggedPath {
		path = path[:maxLoggedPath] + "..."
	}
	s.log.Debug("request refused: no such route", "method", r.Method, "path", path, "status", status)
}

// maxLoggedPath bounds the part of a refused request's path that is logged.
const maxLoggedPath = 256

// Decide runs the routing decision for a parsed request without sending it (ExplainRoute uses
// it): the same decision a request would get, over a view that changes nothing (no probe turn
// taken, no slow-start draw).
func (s *Server) Decide(model string, prompt []byte) ([]clustertable.Entry, routing.Decision, error) {
	return s.decide(model, prefix.Hashes(nil, model, prompt, 0), requestOf(prompt), false)
}

// Policy returns the policy a request for model is decided with now: the model's policy, or,
// while the policies are not loaded and Config.PolicyUnavailable is PolicyUnavailableLocal, the
// defaults restricted to the router's region. Otherwise, without a policy in force, it returns the
// error the request is refused with (wrapping routing.ErrPolicyNotLoaded or ErrPolicyUnreadable).
func (s *Server) Policy(model string) (routing.Policy, error) {
	pol, _, err := s.policy(model)
	return pol, err
}

// policy is Policy, also reporting whether the policy is the local-only stand-in.
func (s *Server) policy(model string) (pol routing.Policy, standIn bool, err error) {
	pol, err = s.policies.Policy(model)
	if err != nil && errors.Is(err, routing.ErrPolicyNotLoaded) && s.cfg.PolicyUnavailable == PolicyUnavailableLocal {
		return routing.LocalOnlyPolicy(s.cfg.Region), true, nil
	}
	return pol, false, err
}

// decide runs the routing decision for a request whose prompt has the given prefix-block hashes;
// route says whether the request will be sent. Without a policy in force for the model it decides
// nothing and returns the policy's error; with the local-only stand-in, a region that does not
// serve the model is reported as the policies not being loaded.
func (s *Server) decide(
	model string,
	hashes []uint64,
	req routing.Request,
	route bool,
) ([]clustertable.Entry, routing.Decision, error) {
	pol, standIn, err := s.policy(model)
	if err != nil {
		return nil, routing.Decision{}, err
	}
	if standIn && route {
		s.metrics.unloadedLocal.Inc()
	}
	var view []clustertable.Entry
	var d routing.Decision
	if route {
		// The table decides over the clusters that can matter, proven to give the decision over
		// every cluster (clustertable.Route); power-of-d draws from math/rand/v2's global source:
		// safe for concurrent use without a lock, so concurrent decisions do not queue behind one
		// another.
		view, d, err = s.table.Route(model, hashes, pol, req, s.cfg.Options, nil)
	} else {
		// A dry run explains every cluster.
		view = s.table.View(model, hashes)
		cs := make([]routing.Cluster, len(view))
		for i := range view {
			cs[i] = view[i].Cluster
		}
		d, err = routing.Decide(s.cfg.Region, cs, pol, req, s.cfg.Options, nil)
	}
	if standIn && errors.Is(err, routing.ErrNotAllowed) {
		err = fmt.Errorf(
			"%w: meanwhile only region %s is used, and no cluster there serves the model (%w)",
			routing.ErrPolicyNotLoaded,
			s.cfg.Region,
			err,
		)
	}
	return view, d, err
}

// requestOf is what routing knows of a request from its prompt: about four bytes per token, and
// 200 output tokens expected.
func requestOf(prompt []byte) routing.Request {
	return routing.Request{PromptTokens: len(prompt) / 4, AvgTokens: len(prompt)/4 + 200}
}

// ttftSLO is the request's own time-to-first-token objective (x-slo-ttft-ms), 0 for none. A
// value the router cannot read is not used for routing and is passed on unchanged: the gateway
// refuses it with 400 naming the header.
func ttftSLO(h http.Header) time.Duration {
	d, err := contract.ParseSLO(h.Get(contract.HeaderSLOTTFT))
	if err != nil {
		return 0
	}
	return d
}

// serveInference handles the inference paths: routed by the body's model and prompt.
func (s *Server) serveInference(w http.ResponseWriter, r *http.Request) { s.serveJSON(w, r, false) }

// servePassthrough handles a pass-through path whose model is in a JSON body: read as the
// inference paths' bodies are, routed on the model alone (no prompt, so no prefix sketch).
func (s *Server) servePassthrough(w http.ResponseWriter, r *http.Request) { s.serveJSON(w, r, true) }

// serveJSON reads a JSON body whole and routes it; passthrough drops its prompt.
func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request, passthrough bool) {
	start := time.Now()
	var span trace.Span
	if s.cfg.Tracer.Enabled() {
		r, span = s.startRequest(r)
		defer span.End()
	}
	tenant, perr := s.tenantOf(r)
	if perr != nil {
		perr.Write(w)
		s.metrics.request("", outcomeUnauthorized)
		if span != nil {
			endRequest(span, "", outcomeUnauthorized)
		}
		return
	}
	buf, perr := s.readBody(r)
	if perr != nil {
		perr.Write(w)
		s.metrics.request("", outcomeOf(perr.Status))
		if span != nil {
			endRequest(span, "", outcomeOf(perr.Status))
		}
		return
	}
	defer buf.Release() // the body's budget is held until the answer has been forwarded
	body := buf.Bytes()
	parsed, perr := parseRequest(body)
	if passthrough {
		parsed.Prompt = nil
	}
	var sess session
	if perr == nil {
		sess, perr = s.sessionOf(r, parsed.SessionID)
	}
	if perr != nil {
		perr.Write(w)
		s.metrics.request("", outcomeOf(perr.Status))
		if span != nil {
			endRequest(span, "", outcomeOf(perr.Status))
		}
		return
	}
	s.serveParsed(w, r, start, span, tenant, body, nil, &parsed, sess)
}

// serveParsed routes a request whose body was read: data held whole, or form streaming (data
// nil). It charges the tenant, forwards, meters and counts the answer.
func (s *Server) serveParsed(
	w http.ResponseWriter,
	r *http.Request,
	start time.Time,
	span trace.Span,
	tenant string,
	data []byte,
	form *formBody,
	parsed *openai.Body,
	sess session,
) {
	model := parsed.Model
	lease, perr := s.admitTenant(tenant, parsed)
	if perr != nil {
		perr.Write(w)
		s.metrics.request("", outcomeOverLimit)
		if span != nil {
			endRequest(span, "", outcomeOverLimit)
		}
		return
	}
	var fb forward.Body = forward.Bytes(data)
	if form != nil {
		fb = form
	}
	var outcome string
	var known bool
	if lease == nil {
		outcome, known = s.route(w, r, fb, model, parsed.Prompt, sess)
	} else {
		strip, release := false, func() {}
		if form == nil {
			var fwdBody []byte
			fwdBody, strip, release = s.askUsage(r.URL.Path, data, parsed, lease)
			fb = forward.Bytes(fwdBody)
		}
		meter := newUsageMeter(w, s.cfg.Bodies, strip)
		outcome, known = s.route(meter, r, fb, model, parsed.Prompt, sess)
		meter.finish()
		release()
		used, reported := meter.tokens()
		if reason := meter.unmetered(); reason != "" {
			s.metrics.unmeteredAnswer(reason)
			s.log.Debug("part of an answer passed on unmetered: without a usage read, the tenant stays charged its reservation",
				"tenant", tenant, "reason", reason)
		}
		finishLease(lease, used, reported, answered(outcome))
	}
	if span != nil {
		endRequest(span, model, outcome)
	}
	if !known {
		model = ""
	}
	s.metrics.request(model, outcome)
	s.metrics.duration.Observe(time.Since(start).Seconds())
	if outcome == outcomeTruncated {
		// The answer started and its body broke: end the client's response short (HTTP/1.1:
		// the connection closes before the declared length or the last chunk; HTTP/2: the
		// stream is reset) so the client's read fails instead of seeing a clean end.
		panic(http.ErrAbortHandler)
	}
}

// Outcomes of requests refused for their tenant.
const (
	outcomeUnauthorized = "unauthorized"
	outcomeOverLimit    = "over_limit"
)

// answered reports whether a request with outcome reached a cluster that answered it (its
// tokens are charged); the others are refunded.
func answered(outcome string) bool {
	switch outcome {
	case string(routing.RouteLocal),
		string(routing.RouteOverflow),
		string(routing.RouteRetry),
		outcomeTruncated,
		"cancelled":
		return true
	}
	return false
}

// outcomeTruncated is the outcome of a request whose answer broke after it had started.
const outcomeTruncated = "truncated"

// route decides and forwards, waiting up to QueueWait for room; it returns the outcome label
// and whether a fresh cluster lists the model (so that the model may be a label value).
func (s *Server) route(
	w http.ResponseWriter,
	r *http.Request,
	body forward.Body,
	model string,
	prompt []byte,
	sess session,
) (outcome string, known bool) {
	deadline := time.Now().Add(s.cfg.QueueWait)
	// The prompt's hashes and length are computed once: a request waiting for room is decided
	// again every RetryPoll.
	hashes, req := prefix.Hashes(nil, model, prompt, 0), requestOf(prompt)
	req.SessionCluster = sess.cluster
	if sess.ok {
		// The session is recorded when the answer's headers go out, before its body streams: a
		// client's next turn, sent the moment this answer ends, already finds it.
		w = &sessionWriter{ResponseWriter: w, s: s, sess: sess}
	}
	req.TTFTSLO = ttftSLO(r.Header)
	var left contract.Reason
	if s.cfg.Outcomes != nil {
		defer func() { s.recordOutcome(w.Header(), model, outcome, known, left) }()
	}
	for {
		_, span := s.cfg.Tracer.Start(r.Context(), SpanRoute, trace.SpanKindInternal)
		view, d, err := s.decide(model, hashes, req, true)
		traceDecision(span, model, req.PromptTokens, view, d, err)
		used := -1
		if err == nil && len(d.Targets) > 0 {
			used = d.Targets[0]
		}
		s.table.Release(view, used)
		known = known || listedFresh(view)
		switch {
		case errors.Is(err, routing.ErrPolicyNotLoaded), errors.Is(err, routing.ErrPolicyUnreadable):
			return s.refuse(r, w, model, err), known
		case errors.Is(err, routing.ErrNoCandidate):
			modelNotFound(model).Write(w)
			return "not_found", known
		case errors.Is(err, routing.ErrNotAllowed):
			notAllowed(model, d).Write(w)
			return "not_allowed", known
		case err == nil:
			if d.LeftBecause != "" {
				s.metrics.left.WithLabelValues(d.LeftBecause.String()).Inc()
			}
			left = d.LeftBecause
			if s.log.Enabled(r.Context(), slog.LevelDebug) {
				s.logDecision(r.Context(), model, req.PromptTokens, view, d)
			}
			ferr := s.forward(w, r, body, s.targets(view, d, req.PromptTokens), s.retarget(model, hashes, req))
			if ferr == nil {
				s.observeOverflow(w.Header(), d)
				return string(d.Route), known
			}
			if errors.Is(ferr, forward.ErrTruncated) {
				s.log.Warn("gateway answer cut short; aborting it", "model", model, "err", ferr)
				return outcomeTruncated, known
			}
			if out, done := s.formFailed(w, body); done {
				return out, known
			}
			s.log.Debug("forward refused everywhere", "model", model, "err", ferr)
		}
		if r.Context().Err() != nil {
			return "cancelled", known
		}
		if !time.Now().Before(deadline) || !sleep(r.Context(), s.cfg.RetryPoll) {
			noRoom(model, s.cfg.QueueWait).Write(w)
			return "no_room", known
		}
	}
}

// recordOutcome hands a routed request's outcome to Config.Outcomes: the cluster that answered
// (from the answer's headers), and the model only when a fresh cluster lists it.
func (s *Server) recordOutcome(h http.Header, model, outcome string, known bool, left contract.Reason) {
	o := Outcome{Time: time.Now(), Outcome: outcome}
	if known {
		o.Model = model
	}
	if answered(outcome) {
		o.Cluster, o.Region = h.Get(contract.HeaderCluster), h.Get(contract.HeaderRegion)
		if route := h.Get(contract.HeaderRoute); outcome != outcomeTruncated && outcome != "cancelled" && route != "" {
			o.Outcome = route
		}
	}
	if o.Outcome == string(routing.RouteOverflow) {
		o.LeftBecause = left
	}
	s.cfg.Outcomes.RecordOutcome(o)
}

// refuse answers a request for model that has no policy in force (err wraps
// routing.ErrPolicyNotLoaded or ErrPolicyUnreadable), counts it, and returns its outcome label.
// The store logs the cause once per change; the refusal itself is logged at debug level.
func (s *Server) refuse(r *http.Request, w http.ResponseWriter, model string, err error) string {
	reason := contract.ReasonUndecodable
	if errors.Is(err, routing.ErrPolicyNotLoaded) {
		reason = contract.ReasonNotLoaded
	}
	s.metrics.unavailable.WithLabelValues(reason.String()).Inc()
	s.log.DebugContext(
		r.Context(),
		"request refused: no routing policy in force",
		"model",
		model,
		"reason",
		reason,
		"err",
		err,
	)
	policyUnavailable(model, reason, s.cfg.Region, err).Write(w)
	return outcomePolicyUnavailable
}

// listedFresh reports whether a cluster of view with a fresh summary lists the model the view
// is for.
func listedFresh(view []clustertable.Entry) bool {
	for i := range view {
		if view[i].Cluster.Lists && !view[i].Cluster.Stale {
			return true
		}
	}
	return false
}

// retarget returns the Retarget of a request being forwarded: a retry is decided again on the
// table as it is then, with the attempts made since (this request's and others') counted in,
// and goes to the new decision's chosen cluster and fallbacks, less the URLs tried. The view is
// a routing one: the cluster the retry goes to first takes its probe turn or slow-start draw
// as a new request's would, and the others' turns are given back. Requests refused together (a
// cluster cut off, say) so spread over the clusters left instead of all retrying at the
// fallback each was given when it arrived.
func (s *Server) retarget(model string, hashes []uint64, req routing.Request) forward.Retarget {
	return func(tried []string) []forward.Target {
		view, d, err := s.decide(model, hashes, req, true)
		var out []forward.Target
		used := -1
		if err == nil {
			d.HandBack = 0 // the offer is for a first attempt
			out = slices.DeleteFunc(
				s.targets(view, d, req.PromptTokens),
				func(t forward.Target) bool { return slices.Contains(tried, t.URL) },
			)
			if len(out) > 0 {
				used = slices.IndexFunc(view, func(e clustertable.Entry) bool { return e.Cluster.Name == out[0].Cluster })
			}
		}
		s.table.Release(view, used)
		return out
	}
}

// targets turns a decision into forward targets, one per gateway replica URL, best first, each
// carrying the request's estimated prompt tokens and the cluster's estimate; the first
// cluster's carry the decision's hand-back offer.
func (s *Server) targets(view []clustertable.Entry, d routing.Decision, promptTokens int) []forward.Target {
	out := make([]forward.Target, 0, len(d.Targets)+1)
	for n, i := range d.Targets {
		e := view[i]
		route := string(routing.RouteOverflow)
		if e.Cluster.Region == s.cfg.Region {
			route = string(routing.RouteLocal)
		}
		for _, u := range e.URLs {
			t := forward.Target{
				Cluster:      e.Cluster.Name,
				Region:       e.Cluster.Region,
				URL:          u,
				Route:        route,
				PromptTokens: promptTokens,
				Estimate:     d.Explain[i].Estimate,
			}
			if n == 0 {
				t.HandBack = d.HandBack // only the first choice
			}
			if s.cfg.Delay != nil {
				t.Delay = s.cfg.Delay(e.Cluster.Region)
			}
			out = append(out, t)
		}
	}
	return out
}

// observeOverflow counts a request answered outside the router's region by how the cluster that
// answered ranked in the decision's estimates: the best, near the best, or other (which only a
// retry reaches).
func (s *Server) observeOverflow(h http.Header, d routing.Decision) {
	served := h.Get(contract.HeaderCluster)
	if h.Get(contract.HeaderRegion) == s.cfg.Region || served == "" || d.Best < 0 {
		return
	}
	choice := landedOther
	for i, e := range d.Explain {
		if e.Cluster != served || !e.Eligible {
			continue
		}
		switch {
		case i == d.Best:
			choice = landedBest
		case e.Estimate <= d.NearBest:
			choice = landedNearBest
		}
	}
	s.metrics.overflow.WithLabelValues(choice).Inc()
}

// Values of the overflow counter's choice label.
const (
	landedBest     = "best"
	landedNearBest = "near_best"
	landedOther    = "other"
)

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// logDecision logs a routing decision at debug level: the chosen cluster and, per eligible
// cluster, "name=estimate/waiting streams/in flight/RTT/best pod's wait/mean wait/waiting
// streams' prompt tokens/in-flight prompt tokens/prefill tokens per second per pod/summary age"
// (times in milliseconds).
func (s *Server) logDecision(
	ctx context.Context,
	model string,
	promptTokens int,
	view []clustertable.Entry,
	d routing.Decision,
) {
	var b strings.Builder
	for i, e := range d.Explain {
		if !e.Eligible {
			continue
		}
		c := view[i].Cluster
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(
			&b,
			"%s=%d/%d/%d/%d/%d/%d/%d/%d/%.0f/%d",
			e.Cluster,
			e.Estimate.Milliseconds(),
			c.Waiting,
			c.InFlight,
			c.RTT.Milliseconds(),
			c.BaseTTFT.Milliseconds(),
			c.MeanTTFT.Milliseconds(),
			c.WaitingTokens,
			c.InFlightTokens,
			c.PrefillTokensPerSec,
			c.SummaryAge.Milliseconds(),
		)
	}
	chosen := ""
	if len(d.Targets) > 0 {
		chosen = d.Explain[d.Targets[0]].Cluster
	}
	s.log.LogAttrs(ctx, slog.LevelDebug, "route decision", slog.String("model", model),
		slog.Int("prompt_tokens", promptTokens),
		slog.String("chosen", chosen), slog.String("route", string(d.Route)),
		slog.String("left_because", d.LeftBecause.String()), slog.Int64("hand_back_ms", d.HandBack.Milliseconds()),
		slog.String("estimates_ms", b.String()))
}
