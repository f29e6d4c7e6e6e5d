package contract

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names, in the lower case HTTP/2 and Envoy's ext_proc carry them (net/http's Header.Get
// and Set accept them as they are; HTTP/1.1 names are case-insensitive).
//
// A client may set only the request headers of the first group. Every other x-switchyard-* and
// x-gateway-* header is reserved: each tier drops it from what a client sends (IsReserved), and
// sets it itself.
const (
	// HeaderPriority is the request's priority band (an integer; higher is served first,
	// negative is sheddable). Read by the gateway's flow control.
	HeaderPriority = "x-switchyard-priority"
	// HeaderTenant names the tenant that flow control keeps fair across.
	HeaderTenant = "x-switchyard-tenant"
	// HeaderObjective is GIE's InferenceObjective name, mapped to a priority by the gateway.
	HeaderObjective = "x-gateway-inference-objective"
	// HeaderFairnessID is GIE's fairness id, used as the tenant when HeaderTenant is absent.
	HeaderFairnessID = "x-gateway-inference-fairness-id"
)

// Session affinity. A client names a conversation with HeaderSessionID (or the body's
// metadata.session_id or user, see openai.Body.SessionID); both tiers send the requests of one
// session back to where its last one was served while that pod or cluster has room. The header is
// not a routing header: it is neither reserved nor dropped, so it reaches the next tier and the
// model server as the client sent it.
const (
	// HeaderSessionID is the default name of the session-id request header (configurable in each
	// tier).
	HeaderSessionID = "x-session-id"
	// MaxSessionID bounds a session id, in bytes. A longer header value is refused (400); a longer
	// body field is not a session id (the request has none).
	MaxSessionID = 256
)

// Per-request latency objectives a client may set, named as llm-d's SLO-aware scheduling names
// them. They are not routing headers (IsReserved and IsRouting are false for them): each tier
// reads them and passes them on unchanged, to the next tier and to the model server.
const (
	// HeaderSLOTTFT is the request's time-to-first-token objective in milliseconds (ParseSLO),
	// from the request's arrival at the gateway to its first token.
	HeaderSLOTTFT = "x-slo-ttft-ms"
	// HeaderSLOTPOT is the request's time-per-output-token objective in milliseconds (ParseSLO):
	// the mean gap between output tokens after the first.
	HeaderSLOTPOT = "x-slo-tpot-ms"
)

// Headers one tier sets on a request for the next one.
const (
	// HeaderHandBack is a router's offer to take the request elsewhere (router → gateway): the
	// predicted time to first token, in whole milliseconds (FormatHandBack, ParseHandBack),
	// above which the gateway answers 429 with HeaderOverflow rather than serve or queue it.
	HeaderHandBack = "x-switchyard-hand-back-ms"
	// HeaderModelName and HeaderBaseModelName carry the requested model and the base model it
	// resolves to (an adapter's base), gateway → model server and ext_proc → Envoy, as GIE sets
	// them.
	HeaderModelName     = "x-gateway-model-name"
	HeaderBaseModelName = "x-gateway-base-model-name"
	// HeaderDestination is GIE's endpoint-picker answer (ext_proc → Envoy): the chosen pod's
	// ip:port, then fallbacks, comma-separated. It is also the key under the envoy.lb dynamic
	// metadata namespace.
	HeaderDestination = "x-gateway-destination-endpoint"
	// HeaderDestinationSubset is Envoy's subset hint (the endpoints the picker must choose from),
	// a key of the envoy.lb.subset_hint metadata namespace.
	HeaderDestinationSubset = "x-gateway-destination-endpoint-subset"
)

// Response headers.
const (
	// HeaderCluster and HeaderRegion name the cluster that served the request: set by its
	// gateway, passed through by routers.
	HeaderCluster = "x-switchyard-cluster"
	HeaderRegion  = "x-switchyard-region"
	// HeaderEndpoint names the pod that served the request (set by the gateway; optional).
	HeaderEndpoint = "x-switchyard-endpoint"
	// HeaderRoute is the router's decision, a Route.
	HeaderRoute = "x-switchyard-route"
	// HeaderOverflow marks a refusal (429) that another cluster may serve: the gateway's hand-back
	// and flow-control shedding, the router's "no room". Its value is "1".
	HeaderOverflow = "x-switchyard-overflow"
	// HeaderPrefixScoring says how the gateway scored the prompt's prefix-cache hits when its
	// profile has the precise-prefix-cache-scorer: FormatPrefixScoring's "precise" (the pods' KV
	// events and the engine's tokenizer) or "approximate; reason=<why>" (the fallback).
	HeaderPrefixScoring = "x-switchyard-prefix-scoring"
)

// PrefixScoring is the scheme of HeaderPrefixScoring.
type PrefixScoring string

// The schemes of HeaderPrefixScoring.
const (
	// PrefixScoringPrecise: matched against the blocks the pods report holding (KV events),
	// hashed from the prompt's token ids as the engine hashes them.
	PrefixScoringPrecise PrefixScoring = "precise"
	// PrefixScoringApproximate: the approximate prefix-cache-scorer (the gateway's own routing
	// history over 64-byte text blocks), because the prompt could not be hashed as the engine
	// does; the value's reason says why.
	PrefixScoringApproximate PrefixScoring = "approximate"
)

// FormatPrefixScoring renders HeaderPrefixScoring's value: the scheme, then "; reason=" and
// reason when reason is not empty.
func FormatPrefixScoring(s PrefixScoring, reason string) string {
	if reason == "" {
		return string(s)
	}
	return string(s) + "; reason=" + reason
}

// ParsePrefixScoring reads HeaderPrefixScoring's value.
func ParsePrefixScoring(v string) (s PrefixScoring, reason string, err error) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(v), ";")
	s = PrefixScoring(strings.TrimSpace(scheme))
	if s != PrefixScoringPrecise && s != PrefixScoringApproximate {
		return "", "", fmt.Errorf("invalid %s header %q: want %s or %s", HeaderPrefixScoring, v,
			PrefixScoringPrecise, PrefixScoringApproximate)
	}
	if rest = strings.TrimSpace(rest); rest != "" {
		var ok bool
		if reason, ok = strings.CutPrefix(rest, "reason="); !ok || reason == "" {
			return "", "", fmt.Errorf("invalid %s header %q: want \"; reason=<why>\" after the scheme",
				HeaderPrefixScoring, v)
		}
	}
	return s, reason, nil
}

// Prefill/decode disaggregation: the gateway names the prefill pod to the decode pod with
// llm-d's header (its routing sidecar, and vLLM's NIXL connector behind it, read it), and tells
// the client what it decided.
const (
	// HeaderPrefillerHostPort is the host:port of the pod that prefills the request (gateway →
	// decode pod; set by the HTTP proxy, and by ext_proc for Envoy to add): the decode pod runs
	// the prompt there (max_tokens 1) and pulls its KV cache. Set only by the gateway: a
	// client's value is dropped by both tiers (IsReserved, IsRouting), so a client can never
	// point a decode pod at an address of its choosing.
	HeaderPrefillerHostPort = "x-prefiller-host-port"
	// HeaderPD is the gateway's prefill/decode decision (response), with a pd-profile-handler:
	// "prefill-decode", "below-threshold", "no-prefill-endpoint", "local-prefill", or
	// "prefill-failed" (the prefill pod failed and the decode pod prefilled the prompt itself).
	HeaderPD = "x-switchyard-pd"
	// HeaderPrefillEndpoint names the pod that prefilled the request (response; shown as
	// HeaderEndpoint shows the decode pod), when the decision is "prefill-decode".
	HeaderPrefillEndpoint = "x-switchyard-prefill-endpoint"
)

// podAddressHeaders are the other headers llm-d's routing sidecar (beside a decode pod) reads a
// peer's address from and sends the request, with its prompt, to: earlier and later spellings
// of the prefiller header, the encoder, KV-cache source and data-parallel rank headers. The
// gateway never sets them, and a client's value would reach the sidecar unchecked (a current
// sidecar reads x-llm-d-prefiller-host-port when x-prefiller-host-port is absent; an older one
// reads x-prefiller-url), so both tiers drop them, with every x-llm-d-* header (llm-d's
// namespace for what its endpoint picker tells its sidecar), as they drop HeaderPrefillerHostPort.
var podAddressHeaders = [...]string{
	HeaderPrefillerHostPort,
	"x-prefiller-url",
	"x-encoder-hosts-ports",
	"x-kv-cache-source-host-port",
	"x-data-parallel-host-port",
}

// podAddressPrefix starts llm-d's endpoint-picker-to-sidecar headers
// (x-llm-d-prefiller-host-port, x-llm-d-encoder-hosts-ports, x-llm-d-kv-cache-source-host-port).
const podAddressPrefix = "x-llm-d-"

// Route is the value of HeaderRoute: how the router placed the request.
type Route string

// The routes a router reports.
const (
	// RouteLocal: a cluster in the router's own region served it.
	RouteLocal Route = "local"
	// RouteOverflow: the local clusters were over their policy's threshold (or drained, or
	// slower), so it went to another region.
	RouteOverflow Route = "overflow"
	// RouteRetry: the first choice refused or failed before the first byte and another cluster
	// served it.
	RouteRetry Route = "retry"
)

// clientHeaders are the reserved-prefix headers a client may set.
var clientHeaders = [...]string{HeaderPriority, HeaderTenant, HeaderObjective, HeaderFairnessID}

// IsReserved reports whether a client-supplied header named name must be dropped: every
// x-switchyard-* and x-gateway-* header but the four a client may set (priority, tenant,
// objective, fairness id), HeaderPrefillerHostPort and the other headers that name a peer a
// model server's sidecar sends the request to (every x-llm-d-* header included). The
// comparison ignores case and does not allocate.
func IsReserved(name string) bool {
	if !hasPrefixFold(name, "x-switchyard-") && !hasPrefixFold(name, "x-gateway-") {
		return isPodAddress(name)
	}
	for _, c := range clientHeaders {
		if len(name) == len(c) && strings.EqualFold(name, c) {
			return false
		}
	}
	return true
}

// IsRouting reports whether name is any x-switchyard-* or x-gateway-* header, the client's own
// included, HeaderPrefillerHostPort or another header naming a peer of a model server (as
// IsReserved). A gateway reads the client's headers first, then drops every routing header
// before it forwards to a model server.
func IsRouting(name string) bool {
	return hasPrefixFold(name, "x-switchyard-") || hasPrefixFold(name, "x-gateway-") || isPodAddress(name)
}

// isPodAddress reports whether name is HeaderPrefillerHostPort or another header that tells a
// model server's sidecar where to send the request.
func isPodAddress(name string) bool {
	if hasPrefixFold(name, podAddressPrefix) {
		return true
	}
	for _, h := range podAddressHeaders {
		if len(name) == len(h) && strings.EqualFold(name, h) {
			return true
		}
	}
	return false
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// SetOverflow marks h as an overflow refusal.
func SetOverflow(h http.Header) { h.Set(HeaderOverflow, "1") }

// IsOverflow reports whether h marks an overflow refusal.
func IsOverflow(h http.Header) bool { return h.Get(HeaderOverflow) == "1" }

// MaxHandBack bounds HeaderHandBack: an hour.
const MaxHandBack = time.Hour

// FormatHandBack renders d as HeaderHandBack's value: whole milliseconds, at least 1, at most
// MaxHandBack.
func FormatHandBack(d time.Duration) string {
	return strconv.FormatInt(min(max(d.Milliseconds(), 1), MaxHandBack.Milliseconds()), 10)
}

// ParseHandBack reads HeaderHandBack's value: 0 for "", an error unless it is a whole number of
// milliseconds from 1 to MaxHandBack.
func ParseHandBack(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 1 || ms > MaxHandBack.Milliseconds() {
		return 0, fmt.Errorf("invalid %s header %q: want whole milliseconds from 1 to %d",
			HeaderHandBack, v, MaxHandBack.Milliseconds())
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// ParseSessionID reads a session-id header value: "" (no session) for an empty or blank value, the
// value with surrounding whitespace trimmed otherwise, and an error naming header when that is
// longer than MaxSessionID bytes or holds a control character.
func ParseSessionID(header, v string) (string, error) {
	v = strings.TrimSpace(v)
	if len(v) > MaxSessionID {
		return "", fmt.Errorf("invalid %s header: %d bytes, want at most %d", header, len(v), MaxSessionID)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == 0x7f {
			return "", fmt.Errorf("invalid %s header: control character at byte %d", header, i)
		}
	}
	return v, nil
}

// MaxSLO bounds HeaderSLOTTFT and HeaderSLOTPOT: an hour.
const MaxSLO = time.Hour

// ParseSLO reads the value of HeaderSLOTTFT or HeaderSLOTPOT: 0 for "" (no objective), an error
// unless it is a decimal number of milliseconds (a fraction allowed, as llm-d reads it) above 0
// and at most MaxSLO. NaN, infinities, hexadecimal and exponent-free garbage are errors.
func ParseSLO(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	ms, err := strconv.ParseFloat(v, 64)
	if err != nil || !decimal(v) || !(ms > 0) || ms > float64(MaxSLO.Milliseconds()) {
		return 0, fmt.Errorf("invalid SLO %q: want milliseconds above 0 and at most %d", v, MaxSLO.Milliseconds())
	}
	return max(time.Duration(ms*float64(time.Millisecond)), 1), nil
}

// decimal reports whether v is spelled with digits, at most one point and an optional exponent:
// strconv.ParseFloat also reads "NaN", "Inf", hexadecimal floats and underscores.
func decimal(v string) bool {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9', c == '.', c == 'e', c == 'E', c == '+', c == '-':
		default:
			return false
		}
	}
	return true
}
