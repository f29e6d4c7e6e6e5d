// Package routing decides where the global router sends a request: it estimates each candidate
// cluster's time to first token (network RTT + expected queue wait + prefill of the uncached
// prompt), keeps traffic in the router's own region while a local cluster is under the policy's
// overflow threshold, and otherwise overflows to the best cluster anywhere, choosing among the
// near-best with power-of-d choices so routers do not herd onto one "free" cluster.
//
// Decide is pure: it reads a snapshot of the cluster table and a policy and returns a decision
// with an explanation for every cluster. It does no I/O and keeps no state. The one state the
// package holds is Sessions, the session → cluster table of session affinity, which the front
// door reads before a decision (Request.SessionCluster) and writes after the request is served.
package routing

import (
	"errors"
	"math"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
)

// Route says why a cluster was chosen; it is the value of the x-switchyard-route header.
type Route = contract.Route

// Routes (contract.Route's values).
const (
	RouteLocal    = contract.RouteLocal
	RouteOverflow = contract.RouteOverflow
	RouteRetry    = contract.RouteRetry
)

// Errors returned by Decide. Callers translate them at the edge (503 with the explanation).
var (
	// ErrNoCandidate means no cluster's summary lists the model: it is unknown here.
	ErrNoCandidate = errors.New("routing: no cluster serves the model")
	// ErrNotAllowed means clusters serve the model, but none in a region the policy allows.
	ErrNotAllowed = errors.New("routing: no cluster in an allowed region")
	// ErrNoRoom means every allowed cluster is saturated or over its overflow cap.
	ErrNoRoom = errors.New("routing: no cluster has room")
	// ErrPolicyNotLoaded means the routing policies have not been loaded yet (the router has not
	// read its configuration since it started): a request is not routed with the defaults
	// meanwhile, since the defaults allow every region (data residency fails closed).
	ErrPolicyNotLoaded = errors.New("routing: routing policies are not loaded yet")
	// ErrPolicyUnreadable means the model's stored policy cannot be read (it does not decode or
	// is not valid): the model is refused, never routed with the defaults or an older policy.
	ErrPolicyUnreadable = errors.New("routing: the model's routing policy cannot be read")
)

// Cluster is what the router knows about one cluster for one model at decision time.
type Cluster struct {
	// Name and Region identify the cluster.
	Name, Region string
	// Serves reports whether the cluster serves the requested model or adapter (its summary
	// lists the model with ready pods).
	Serves bool
	// Lists reports whether the cluster's summary lists the model at all, ready pods or not: a
	// model whose clusters all lack ready pods for a moment is known, and a request for it waits
	// for room (ErrNoRoom) instead of being told it does not exist (ErrNoCandidate).
	Lists bool
	// Stale is true when the cluster's newest capacity summary is older than its TTL.
	Stale bool
	// Drained is true when an operator drained the cluster or its region.
	Drained bool
	// Unhealthy is true when the router's passive health checks have ejected the cluster.
	Unhealthy bool
	// RTT is the estimated round trip from this router to the cluster.
	RTT time.Duration
	// ReadyPods serving the model.
	ReadyPods int
	// TotalKVTokens and FreeKVTokens are the model's KV-cache capacity and headroom in the cluster.
	TotalKVTokens, FreeKVTokens int64
	// Queue and Running are requests waiting and running on the model's pods, per the summary.
	Queue, Running int
	// InFlight is the number of requests this router sent to the cluster since that summary.
	InFlight int
	// Waiting is the number of this router's streamed requests the cluster has accepted that
	// have not had their first token yet: what this router has queued there for prefill, known
	// at once rather than at the next summary.
	Waiting int
	// InFlightTokens and WaitingTokens are the prompt tokens of those requests: the prefill work
	// they brought. 0 when the router did not know their lengths; Estimate then counts each of
	// them as one more prompt like the one being routed.
	InFlightTokens, WaitingTokens int64
	// SaturatedFraction is the fraction of the model's pods that are saturated (0..1).
	SaturatedFraction float64
	// BaseTTFT is the gateway's predicted wait on its best pod before it starts on a request (its
	// predicted TTFT for the reference request less that request's prefill; includes the queue).
	BaseTTFT time.Duration
	// MeanTTFT is the same wait averaged over the pods BaseTTFT is the best of (the unsaturated
	// ones); 0 when the summary does not carry it. Work sent since the summary fills the best pod
	// up to the others' level before it spreads over all of them.
	MeanTTFT time.Duration
	// SummaryAge is how old the summary's figures are. A pod works through what was ahead of it
	// while the summary travels: by now the cluster has worked off up to SummaryAge of the wait
	// the summary predicted and of the work sent since (InFlight), but of the latter no more
	// than InFlightAge, how long ago the oldest of it was sent (0: just now).
	SummaryAge, InFlightAge time.Duration
	// StepTime is one engine step on a pod (the inverse of its decode speed): the least wait a
	// busy pod has, which the predicted wait does not drain below. 0 when unknown.
	StepTime time.Duration
	// PrefillTokensPerSec is the per-pod prefill speed (tokens/s); 0 when unknown.
	PrefillTokensPerSec float64
	// ServiceTime is the mean time a request occupies a pod slot; 0 when unknown.
	ServiceTime time.Duration
	// CachedPrefixTokens is how much of this request's prompt the cluster's prefix sketch says it
	// holds.
	CachedPrefixTokens int
	// Returning is true while the cluster is in slow start (its gateway restarted, or its
	// ejection ended, less than the slow start ago) and this request's slow-start draw let it in.
	// Until it has served requests again its summary may carry the gateway's prior speeds rather
	// than measured ones, which can make it look slower than it is for good: Decide sends it its
	// fair share of the pool (one request in as many as the pool has clusters) whatever its
	// estimate, so that it serves, and the draw has already scaled that share by slow start's.
	Returning bool
	// RegionOverflowInFlight is this router's in-flight overflow requests to the cluster's region.
	RegionOverflowInFlight int
}

// Utilization is the cluster's load in [0,1] for the overflow threshold: the larger of its KV-cache
// use (counting the router's in-flight requests at avgTokens each) and its saturated-pod fraction.
func (c *Cluster) Utilization(avgTokens int) float64 {
	if c.TotalKVTokens <= 0 || c.ReadyPods <= 0 {
		return 1
	}
	used := float64(c.TotalKVTokens-c.FreeKVTokens) + float64(c.InFlight*avgTokens)
	u := math.Max(used/float64(c.TotalKVTokens), c.SaturatedFraction)
	return math.Min(math.Max(u, 0), 1)
}

// Policy is the routing policy for one model (stored in etcd under policies/<model>).
type Policy struct {
	// OverflowThreshold is the local utilization at or above which traffic may leave the region.
	OverflowThreshold float64
	// AllowedRegions restricts candidates (data residency); empty allows every region. Fails closed.
	AllowedRegions []string
	// OverflowCap bounds this router's in-flight overflow requests per remote region; 0 = no cap.
	OverflowCap int
	// TTFTSLO is the time-to-first-token objective; estimates above it are reported as misses.
	TTFTSLO time.Duration
}

// DefaultPolicy is used for models with no stored policy: threshold 0.8, every region, no cap.
func DefaultPolicy() Policy { return Policy{OverflowThreshold: 0.8} }

// LocalOnlyPolicy is the default policy restricted to region: what a router that has not loaded
// its policies yet may route with when its operator chose in-region routing over refusal. It
// keeps every request in the router's own region, which violates a residency rule that excludes
// that region.
func LocalOnlyPolicy(region string) Policy {
	p := DefaultPolicy()
	p.AllowedRegions = []string{region}
	return p
}

// Request is what the router knows about the request being routed.
type Request struct {
	// PromptTokens is the estimated prompt length.
	PromptTokens int
	// AvgTokens is the KV footprint assumed for an in-flight request (prompt + expected output).
	AvgTokens int
	// SessionCluster is the cluster that served the request's session last (Sessions), "" for
	// none: Decide keeps the session there while that cluster is in the pool it chooses from
	// (it has room, and local first, drains, residency and the overflow cap all let it) and its
	// estimate is within Options.SessionSlack of the best.
	SessionCluster string
	// TTFTSLO is the request's own time-to-first-token objective (x-slo-ttft-ms), 0 for none:
	// clusters estimated to meet it are preferred to those that are not (see Decide).
	TTFTSLO time.Duration
}

// Options tune the decision; the zero value is not valid, use DefaultOptions.
type Options struct {
	// NearBest is the relative window around the best estimate inside which power-of-d chooses.
	NearBest float64
	// MaxChoices caps how many near-best candidates power-of-d samples from.
	MaxChoices int
	// D is the number of random samples of power-of-d choices.
	D int
	// LocalPreference is how many times sooner a cluster elsewhere must be estimated to answer
	// before a busy local cluster under the overflow threshold is passed over (>= 1; 1 = latency
	// only).
	LocalPreference float64
	// BacklogPerPod is how many of this router's requests per ready pod may wait at a local
	// cluster for their first token before the cluster counts as past its throughput: more
	// arrive than it prefills. A local cluster past it is passed over as soon as a cluster
	// elsewhere is estimated to answer sooner than the near-best window around the local
	// estimate (0 turns the rule off).
	BacklogPerPod float64
	// LocalOnly keeps every request in the router's region: clusters elsewhere are not
	// candidates, so nothing overflows. It is the baseline Tier 2 is measured against (what one
	// router per region without cross-region overflow gives), not a production setting.
	LocalOnly bool
	// Spillover replaces the latency-estimated choice with what a simple operator setup does:
	// every request stays in the router's region, spread uniformly over its clusters under the
	// policy's overflow threshold, until none is; then it goes to the nearest region by round
	// trip alone (uniformly over that region's clusters with room), with no estimate of queue,
	// prefill or free KV cache, no local preference margin and no hand-back offer. It is a
	// baseline Tier 2 is measured against, not a production setting. LocalOnly wins over it.
	Spillover bool
	// SessionSlack is how much slower than the best estimate, relatively, the cluster that served
	// a request's session last may be and still keep it (session affinity; its prefix cache holds
	// the conversation, which the prefix sketch may not show). Negative turns session affinity
	// off. The spillover mode ignores sessions.
	SessionSlack float64
}

// DefaultOptions: within 20% of the best, among the best three, two random samples; a busy
// local cluster kept unless elsewhere is estimated three times as fast, or unless two of this
// router's requests per pod already wait there for their first token and elsewhere is sooner;
// overflow on; a session kept on its cluster while that is within 50% of the best estimate.
func DefaultOptions() Options {
	return Options{NearBest: 0.2, MaxChoices: 3, D: 2, LocalPreference: 3, BacklogPerPod: 2, SessionSlack: 0.5}
}
