package framework

import (
	"context"
	"fmt"
)

// RoleLabel is the pod label that gives a model server's part in prefill/decode disaggregation,
// llm-d's name for it. Static and file endpoints carry it among their labels (the endpoints
// file's role field sets it).
const RoleLabel = "llm-d.ai/role"

// Role is a model server's part in prefill/decode disaggregation.
type Role uint8

// The roles. An endpoint without the label, or with a value not listed here, is RoleBoth: it
// prefills and decodes, as every pod of an aggregated fleet does.
const (
	// RoleBoth serves whole requests (label value "both" or "prefill-decode", or no label).
	RoleBoth Role = iota
	// RolePrefill computes prompts' KV caches for decode pods (label value "prefill").
	RolePrefill
	// RoleDecode decodes, pulling the prompt's KV cache from the prefill pod it is told of
	// (label value "decode").
	RoleDecode
)

// String returns the role's label value.
func (r Role) String() string {
	switch r {
	case RolePrefill:
		return "prefill"
	case RoleDecode:
		return "decode"
	default:
		return "both"
	}
}

// ParseRole reads a RoleLabel value: "prefill", "decode", "both" or "prefill-decode"; "" is
// RoleBoth. Other values are an error.
func ParseRole(v string) (Role, error) {
	switch v {
	case "", "both", "prefill-decode":
		return RoleBoth, nil
	case "prefill":
		return RolePrefill, nil
	case "decode":
		return RoleDecode, nil
	}
	return RoleBoth, fmt.Errorf("role %q: want prefill, decode, both or prefill-decode", v)
}

// RoleOf returns the role of the endpoint meta m describes, from its RoleLabel; a missing or
// unknown value is RoleBoth. It does not allocate.
func RoleOf(m *EndpointMeta) Role {
	r, _ := ParseRole(m.Labels[RoleLabel])
	return r
}

// CanPrefillForOthers reports whether the endpoint m describes may compute prompts for other
// endpoints to decode: its RoleLabel is "prefill", or "both" or "prefill-decode" given
// explicitly. A pod without the label serves whole requests, as every pod of an aggregated
// fleet does, and is never made another pod's prefill endpoint.
func CanPrefillForOthers(m *EndpointMeta) bool {
	switch m.Labels[RoleLabel] {
	case "prefill", "both", "prefill-decode":
		return true
	}
	return false
}

// Prefill/decode decisions, the value of Result.Disaggregation (and of the x-switchyard-pd
// response header) when the profile has a DisaggregationHandler.
const (
	// PDSplit: a prefill endpoint computes the prompt, the destination decodes.
	PDSplit = "prefill-decode"
	// PDBelowThreshold: the prompt's uncached part on the decode endpoint is below the
	// handler's threshold, so the decode endpoint prefills it itself.
	PDBelowThreshold = "below-threshold"
	// PDNoPrefill: no prefill endpoint was left after the prefill profile's filters (none in the
	// pool, all saturated or ejected), so the decode endpoint prefills itself.
	PDNoPrefill = "no-prefill-endpoint"
	// PDLocalPrefill: a prefill endpoint was found, but the handler judged that the decode
	// endpoint prefilling the prompt itself costs less (the prefill endpoints are backed up, or
	// the decode endpoint has no batch to stall), so the decode endpoint prefills it.
	PDLocalPrefill = "local-prefill"
)

// PDDecisions are the values of Result.Disaggregation a DisaggregationHandler's profile
// produces, a fixed set (the label values of switchyard_gateway_pd_decisions_total).
var PDDecisions = []string{PDSplit, PDBelowThreshold, PDNoPrefill, PDLocalPrefill}

// DisaggregationHandler runs a request through two scheduling profiles, llm-d's
// pd-profile-handler: the decode profile picks the destination, and, when NeedsPrefill says so,
// the prefill profile picks the endpoint that computes the prompt's KV cache, which the
// destination pulls (Result.Prefill). Implementations must be safe for concurrent use.
type DisaggregationHandler interface {
	Plugin
	// Profiles names the decode and the prefill profile of the config.
	Profiles() (decode, prefill string)
	// NeedsPrefill reports whether req, for which the decode profile chose decode (its cycle
	// state cs holds the scorers' results, e.g. the prefix match), is worth a prefill endpoint.
	NeedsPrefill(ctx context.Context, cs *CycleState, req *Request, decode Endpoint) bool
}

// PrefillWeigher is an optional DisaggregationHandler extension, found by type assertion: once
// the prefill profile has picked prefills for req (its targets, best first; decode is the decode
// endpoint, cs the decode profile's cycle state and pcs the prefill profile's), SplitPays
// returns the index of the prefill endpoint that would compute the prompt soonest and whether
// sending it there costs less than decode prefilling it itself. False makes the decision
// PDLocalPrefill. Implementations must be safe for concurrent use.
type PrefillWeigher interface {
	SplitPays(ctx context.Context, cs, pcs *CycleState, req *Request, decode Endpoint,
		prefills []Endpoint) (best int, pays bool)
}
