package contract

import (
	"fmt"
	"slices"
)

// Reason is why a tier decided what it did: why a router chose, passed over or could not use a
// cluster, why a request left the router's region, why a request was refused (the code of an
// OpenAI-style error answer), why a gateway published a capacity summary or how its flow control
// ended a request it held back. Its value is the reason's stable machine spelling (snake_case): the
// wire value in JSON (the router's "reason_code" and error "code" fields), in the admin API's
// reason_code and in metric label values. Text gives the human text shown beside it.
//
// Code compares Reason values, never their text; every reason is one of the constants below
// (Reasons lists them), so a label taking Reason values has a bounded set.
type Reason string

// Why a router chose or passed over a cluster (a candidate of ExplainRoute and of the router's
// residency refusal).
const (
	// ReasonChosenLocal: chosen among the router's own region's clusters with room.
	ReasonChosenLocal Reason = "chosen_local"
	// ReasonChosenOverflow: chosen elsewhere, since no local cluster had room.
	ReasonChosenOverflow Reason = "chosen_overflow"
	// ReasonChosenLocalReturning: ReasonChosenLocal, the cluster drawn as a returning cluster's share.
	ReasonChosenLocalReturning Reason = "chosen_local_returning"
	// ReasonChosenOverflowReturning: ReasonChosenOverflow, the cluster drawn as a returning
	// cluster's share.
	ReasonChosenOverflowReturning Reason = "chosen_overflow_returning"
	// ReasonChosenSession: chosen because it served the request's session last, has room and
	// is near the best estimate (the router's session affinity).
	ReasonChosenSession Reason = "chosen_session"
	// ReasonSessionElsewhere: drawn by power-of-d, passed over for the cluster that served the
	// request's session last.
	ReasonSessionElsewhere Reason = "session_elsewhere"
	// ReasonLocalHasRoom: a cluster elsewhere passed over because a local one has room.
	ReasonLocalHasRoom Reason = "local_has_room"
	// ReasonOverThreshold: a local cluster at or over its policy's overflow threshold.
	ReasonOverThreshold Reason = "over_threshold"
	// ReasonRemoteSooner: a busy local cluster, and elsewhere is LocalPreference times sooner.
	ReasonRemoteSooner Reason = "remote_sooner"
	// ReasonPastThroughput: this router's requests queue at a local cluster for a first token,
	// and elsewhere is estimated sooner beyond the near-best window.
	ReasonPastThroughput Reason = "past_throughput"
	// ReasonOverflowCap: the cluster's region has reached the policy's overflow cap.
	ReasonOverflowCap Reason = "overflow_cap"
	// ReasonNotNearBest: the estimate is not within the near-best window.
	ReasonNotNearBest Reason = "not_near_best"
	// ReasonNotDrawn: near the best, but not drawn by power-of-d choices.
	ReasonNotDrawn Reason = "not_drawn"
	// ReasonYielded: drawn, then passed over for a returning cluster's share.
	ReasonYielded Reason = "yielded"
	// ReasonNotNearest: the spillover routing mode overflowed to a region nearer by round trip.
	ReasonNotNearest Reason = "not_nearest"
	// ReasonSpilloverNotDrawn: the spillover routing mode drew another of the clusters it kept.
	ReasonSpilloverNotDrawn Reason = "spillover_not_drawn"
	// ReasonMissesSLO: the cluster's estimate is above the request's time-to-first-token
	// objective (x-slo-ttft-ms) and another cluster's is not.
	ReasonMissesSLO Reason = "misses_slo"
)

// Why a cluster could not take a request at all.
const (
	// ReasonNotServed: the cluster does not serve the model.
	ReasonNotServed Reason = "not_served"
	// ReasonNoReadyPods: the cluster lists the model but has no ready pod for it.
	ReasonNoReadyPods Reason = "no_ready_pods"
	// ReasonRegionNotAllowed: the model's policy does not allow the cluster's region.
	ReasonRegionNotAllowed Reason = "region_not_allowed"
	// ReasonDrained: the cluster or its region is drained.
	ReasonDrained Reason = "drained"
	// ReasonStale: the cluster's capacity summary is older than its TTL.
	ReasonStale Reason = "stale"
	// ReasonUnhealthy: the router's passive health has ejected the cluster.
	ReasonUnhealthy Reason = "unhealthy"
	// ReasonSaturated: the cluster is fully used.
	ReasonSaturated Reason = "saturated"
	// ReasonLocalOnly: outside the router's region while it routes in-region only.
	ReasonLocalOnly Reason = "local_only"
)

// Why a request left the router's region (besides ReasonPastThroughput, ReasonRemoteSooner and
// ReasonOverThreshold): the reason of the local cluster that came nearest to keeping it.
const (
	// ReasonUnavailable: every local cluster serving the model is drained, stale, unhealthy,
	// saturated or without ready pods.
	ReasonUnavailable Reason = "unavailable"
	// ReasonNoLocal: no cluster of the region serves the model.
	ReasonNoLocal Reason = "no_local"
)

// Why a model has no routing policy in force.
const (
	// ReasonNotLoaded: the router has not loaded its policies yet.
	ReasonNotLoaded Reason = "not_loaded"
	// ReasonUndecodable: the model's stored policy cannot be read.
	ReasonUndecodable Reason = "undecodable"
)

// Error codes: the "code" of an OpenAI-style error answer (contract/openai.Error).
const (
	// ReasonBadRequest: the router's 400 for a malformed request.
	ReasonBadRequest Reason = "bad_request"
	// ReasonInvalidRequest: the gateway's 400 for a malformed request or a bad header.
	ReasonInvalidRequest Reason = "invalid_request"
	// ReasonRequestTooLarge: 413, the body is over the limit.
	ReasonRequestTooLarge Reason = "request_too_large"
	// ReasonRequestTimeout: the gateway's 408, the body did not arrive within its deadline.
	ReasonRequestTimeout Reason = "request_timeout"
	// ReasonModelNotFound: 404, nothing serves the model.
	ReasonModelNotFound Reason = "model_not_found"
	// ReasonResidencyPolicy: 503, no cluster serving the model is in a region its policy allows.
	ReasonResidencyPolicy Reason = "residency_policy"
	// ReasonPolicyUnavailable: 503, no routing policy is in force for the model.
	ReasonPolicyUnavailable Reason = "policy_unavailable"
	// ReasonNoCapacity: nothing can take the request now (the router's 429, the gateway's 503).
	ReasonNoCapacity Reason = "no_capacity"
	// ReasonOverloaded: the gateway's 429 when flow control refuses or hands back a request.
	ReasonOverloaded Reason = "overloaded"
	// ReasonSLOUnattainable: the gateway's 429 for a sheddable request with a latency objective
	// (x-slo-ttft-ms, x-slo-tpot-ms) that no pod is predicted to meet.
	ReasonSLOUnattainable Reason = "slo_unattainable"
	// ReasonBodyBudgetExhausted: 503, the in-flight body budget cannot hold one more body.
	ReasonBodyBudgetExhausted Reason = "body_budget_exhausted"
	// ReasonClientClosedRequest: 499, the client went away.
	ReasonClientClosedRequest Reason = "client_closed_request"
	// ReasonUpstreamUnreachable: 502, the chosen model server could not be reached.
	ReasonUpstreamUnreachable Reason = "upstream_unreachable"
	// ReasonShuttingDown: the router's 503 while it drains.
	ReasonShuttingDown Reason = "shutting_down"
	// ReasonRateLimitExceeded: the router's 429 when a tenant is over one of its limits (tokens
	// per minute, requests per second, requests in flight), with Retry-After.
	ReasonRateLimitExceeded Reason = "rate_limit_exceeded"
	// ReasonInvalidAPIKey: the router's 401 when API keys are configured and the request carries
	// none or an unknown one.
	ReasonInvalidAPIKey Reason = "invalid_api_key"
	// ReasonTenantUnavailable: the router's 503 when the tenant's stored limits cannot be read.
	ReasonTenantUnavailable Reason = "tenant_unavailable"
)

// Why a gateway published a capacity summary.
const (
	// ReasonPublishFirst: the first summary since the gateway started.
	ReasonPublishFirst Reason = "first"
	// ReasonPublishChange: a figure moved past its threshold.
	ReasonPublishChange Reason = "change"
	// ReasonPublishHeartbeat: nothing moved for the heartbeat interval.
	ReasonPublishHeartbeat Reason = "heartbeat"
)

// How a gateway's flow control ended a request it held back: the outcome label of
// switchyard_gateway_flow_outcomes_total. Every one but ReasonFlowDispatched and ReasonFlowError
// is a shedding (answered 429 with the overflow marker, except a cancelled request).
const (
	// ReasonFlowDispatched: a queued request was scheduled once room freed.
	ReasonFlowDispatched Reason = "dispatched"
	// ReasonFlowError: scheduling a queued request failed for another reason than saturation.
	ReasonFlowError Reason = "error"
	// ReasonFlowExpired: the request waited in the queue past the queue TTL.
	ReasonFlowExpired Reason = "expired"
	// ReasonFlowEvicted: a higher-priority request took the request's place in a full queue.
	ReasonFlowEvicted Reason = "evicted"
	// ReasonFlowRejected: refused without queueing (queue full, flow control off, shutting down).
	ReasonFlowRejected Reason = "rejected"
	// ReasonFlowCancelled: the client went away while the request was queued.
	ReasonFlowCancelled Reason = "cancelled"
	// ReasonFlowHandedBack: the gateway took a router's offer and gave the request back.
	ReasonFlowHandedBack Reason = "handed_back"
)

// Use says where a reason appears. A reason may appear in several places.
type Use uint8

// Where reasons appear.
const (
	// UseCandidate: a candidate's reason in ExplainRoute and in the router's residency refusal.
	UseCandidate Use = 1 << iota
	// UseLeftRegion: why a request left the router's region,
	// switchyard_router_overflow_reason_total{reason}.
	UseLeftRegion
	// UsePolicy: why a model has no policy in force,
	// switchyard_router_policy_unavailable_total{reason}.
	UsePolicy
	// UseRouterError: an error code the router answers.
	UseRouterError
	// UseGatewayError: an error code the gateway answers (HTTP proxy and ext_proc).
	UseGatewayError
	// UsePublish: why a gateway published a summary,
	// switchyard_gateway_summaries_published_total{reason}.
	UsePublish
	// UseFlowOutcome: how flow control ended a request,
	// switchyard_gateway_flow_outcomes_total{outcome}.
	UseFlowOutcome
)

// reasonInfo is a reason's human text and where it appears.
type reasonInfo struct {
	text string
	uses Use
}

// reasons holds every Reason. The text of the router's candidate reasons is the English text
// ExplainRoute and the residency refusal have always shown.
var reasons = map[Reason]reasonInfo{
	ReasonChosenLocal:             {"chosen: local first, under the overflow threshold", UseCandidate},
	ReasonChosenOverflow:          {"chosen: overflow, no local cluster has room", UseCandidate},
	ReasonChosenLocalReturning:    {"chosen: local first, under the overflow threshold" + returning, UseCandidate},
	ReasonChosenOverflowReturning: {"chosen: overflow, no local cluster has room" + returning, UseCandidate},
	ReasonChosenSession: {
		"chosen: served the request's session last, has room and is near the best estimate",
		UseCandidate,
	},
	ReasonSessionElsewhere: {
		"drawn by power-of-d, passed over for the cluster that served the request's session last",
		UseCandidate,
	},
	ReasonLocalHasRoom:  {"a local cluster has room", UseCandidate},
	ReasonOverThreshold: {"over the overflow threshold", UseCandidate | UseLeftRegion},
	ReasonRemoteSooner: {
		"a cluster elsewhere is estimated to answer several times sooner",
		UseCandidate | UseLeftRegion,
	},
	ReasonPastThroughput: {"past its throughput (this router's requests queue there for a first token) and a cluster " +
		"elsewhere is estimated sooner beyond the near-best window", UseCandidate | UseLeftRegion},
	ReasonOverflowCap: {"region overflow cap reached", UseCandidate},
	ReasonNotNearBest: {"not near the best estimate", UseCandidate},
	ReasonNotDrawn:    {"near the best, not drawn by power-of-d", UseCandidate},
	ReasonYielded:     {"drawn by power-of-d, passed over for a returning cluster's share", UseCandidate},
	ReasonNotNearest:  {"a nearer region has room (spillover routing mode: overflow by round trip only)", UseCandidate},
	ReasonSpilloverNotDrawn: {
		"not drawn (spillover routing mode: uniformly among the local clusters with room, or the nearest region's)",
		UseCandidate,
	},
	ReasonMissesSLO: {
		"estimated above the request's time-to-first-token objective, which another cluster is estimated to meet",
		UseCandidate | UseLeftRegion,
	},
	ReasonNotServed:        {"does not serve the model", UseCandidate},
	ReasonNoReadyPods:      {"no ready pods", UseCandidate},
	ReasonRegionNotAllowed: {"region not allowed by policy", UseCandidate},
	ReasonDrained:          {"drained", UseCandidate},
	ReasonStale:            {"stale capacity summary", UseCandidate},
	ReasonUnhealthy:        {"unhealthy (passive health)", UseCandidate},
	ReasonSaturated:        {"saturated", UseCandidate},
	ReasonLocalOnly:        {"outside the router's region (local-only routing mode)", UseCandidate},

	ReasonUnavailable: {
		"every local cluster serving the model is drained, stale, unhealthy, saturated or without ready pods",
		UseLeftRegion,
	},
	ReasonNoLocal: {"no cluster of the router's region serves the model", UseLeftRegion},

	ReasonNotLoaded:   {"the router has not loaded its routing policies yet", UsePolicy},
	ReasonUndecodable: {"the model's stored routing policy cannot be read", UsePolicy},

	ReasonBadRequest:          {"the request is malformed", UseRouterError},
	ReasonInvalidRequest:      {"the request is malformed or carries a bad header", UseGatewayError},
	ReasonRequestTooLarge:     {"the request body is over the limit", UseRouterError | UseGatewayError},
	ReasonRequestTimeout:      {"the request body did not arrive within its deadline", UseGatewayError},
	ReasonModelNotFound:       {"nothing serves the model", UseRouterError | UseGatewayError},
	ReasonResidencyPolicy:     {"no cluster serving the model is in a region its policy allows", UseRouterError},
	ReasonPolicyUnavailable:   {"no routing policy is in force for the model", UseRouterError},
	ReasonNoCapacity:          {"nothing can take the request now", UseRouterError | UseGatewayError},
	ReasonOverloaded:          {"flow control refused or handed back the request", UseGatewayError},
	ReasonSLOUnattainable:     {"no pod is predicted to meet the sheddable request's latency objective", UseGatewayError},
	ReasonBodyBudgetExhausted: {"the in-flight request body budget is spent", UseRouterError | UseGatewayError},
	ReasonClientClosedRequest: {"the client closed the request", UseGatewayError},
	ReasonUpstreamUnreachable: {"the model server could not be reached", UseGatewayError},
	ReasonShuttingDown:        {"the router is shutting down", UseRouterError},
	ReasonRateLimitExceeded:   {"the tenant is over one of its limits", UseRouterError},
	ReasonInvalidAPIKey:       {"the API key is missing or unknown", UseRouterError},
	ReasonTenantUnavailable:   {"the tenant's stored limits cannot be read", UseRouterError},

	ReasonPublishFirst:     {"the first summary since the gateway started", UsePublish},
	ReasonPublishChange:    {"a figure moved past its threshold", UsePublish},
	ReasonPublishHeartbeat: {"nothing moved for the heartbeat interval", UsePublish},

	ReasonFlowDispatched: {"scheduled from the flow-control queue once room freed", UseFlowOutcome},
	ReasonFlowError:      {"scheduling from the flow-control queue failed", UseFlowOutcome},
	ReasonFlowExpired:    {"queued longer than the queue TTL", UseFlowOutcome},
	ReasonFlowEvicted:    {"evicted from the full queue by a higher-priority request", UseFlowOutcome},
	ReasonFlowRejected:   {"refused without queueing: queue full, flow control off or shutting down", UseFlowOutcome},
	ReasonFlowCancelled:  {"the client went away while queued", UseFlowOutcome},
	ReasonFlowHandedBack: {"handed back to the router that offered to take it elsewhere", UseFlowOutcome},
}

// returning is what a chosen reason adds when the cluster was drawn as a returning cluster's share.
const returning = "; returning from slow start, sent its share whatever its estimate"

// String returns r's machine spelling.
func (r Reason) String() string { return string(r) }

// Text returns r's human text; for a value that is not a Reason, its spelling.
func (r Reason) Text() string {
	if info, ok := reasons[r]; ok {
		return info.text
	}
	return string(r)
}

// Uses returns where r appears (0 for a value that is not a Reason).
func (r Reason) Uses() Use { return reasons[r].uses }

// Valid reports whether r is one of the Reason constants.
func (r Reason) Valid() bool {
	_, ok := reasons[r]
	return ok
}

// MarshalText returns r's machine spelling.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r), nil }

// UnmarshalText sets r from its machine spelling; an unknown spelling is an error.
func (r *Reason) UnmarshalText(b []byte) error {
	v, err := ParseReason(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// ParseReason returns the Reason spelled s.
func ParseReason(s string) (Reason, error) {
	if r := Reason(s); r.Valid() {
		return r, nil
	}
	return "", fmt.Errorf("contract: unknown reason %q", s)
}

// Reasons returns every Reason that appears in one of the places of u (every Reason for u = 0),
// sorted by spelling.
func Reasons(u Use) []Reason {
	out := make([]Reason, 0, len(reasons))
	for r, info := range reasons {
		if u == 0 || info.uses&u != 0 {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}
