// Package tracing is the router's part of tracing: the attribute keys its spans carry (see
// docs/router.md#tracing), its instrumentation scope, service name and metric namespace, and
// the helpers of its routing spans. The provider, export queue, tracer and bounded attribute
// helpers are the shared telemetry/tracing package.
package tracing

import (
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// Scope is the instrumentation scope of the router's spans.
const Scope = "github.com/switchyard-dev/switchyard/global-router"

// Attribute keys the router's spans carry (see docs/router.md#tracing).
const (
	AttrCluster      = telemetry.AttrCluster
	AttrRegion       = telemetry.AttrRegion
	AttrModel        = "gen_ai.request.model"
	AttrPromptTokens = "switchyard.prompt_tokens_estimate"
	AttrRoute        = "switchyard.route"
	AttrReason       = "switchyard.reason"
	AttrLeftBecause  = "switchyard.left_because"
	AttrCandidates   = "switchyard.candidates"
	AttrTopEstimates = "switchyard.top_estimates"
	AttrHandBack     = "switchyard.hand_back_ms"
	AttrOutcome      = "switchyard.outcome"
	AttrAttempt      = "switchyard.attempt"
	AttrURL          = "url.full"
	AttrStatus       = telemetry.AttrStatus
	AttrMethod       = "http.request.method"
	AttrHTTPRoute    = "http.route"
	AttrTTFT         = "switchyard.ttft_ms"
	AttrStreamed     = "switchyard.streamed"
	AttrErrorType    = telemetry.AttrErrorType
	EventFirstToken  = "first_token"
	// MaxTopEstimates bounds the candidates whose estimates a routing span lists.
	MaxTopEstimates = 3
	// maxClusterBytes bounds a cluster's name in an EstimateEntry.
	maxClusterBytes = 64
)

// DefaultConfig returns the router's tracing defaults: the shared ones with the router's
// service name (global-router), scope and metric namespace (switchyard_router_trace_*), and a
// client's traceparent ignored (a new trace linked to it): the router is the internet edge, and
// no client may choose which of its requests are recorded or into which trace they go.
func DefaultConfig() telemetry.Config {
	c := telemetry.DefaultConfig()
	c.ServiceName, c.Scope, c.MetricNamespace = "global-router", Scope, "switchyard_router"
	c.RemoteParent = telemetry.RemoteParentIgnore
	return c
}

// NewTracer returns a tracer over tp with the router's scope (nil tp: a disabled one).
func NewTracer(tp trace.TracerProvider) *telemetry.Tracer { return telemetry.NewTracer(tp, Scope) }

// EstimateEntry formats one candidate's estimated time to first token for AttrTopEstimates:
// "cluster=12.5ms", the name bounded.
func EstimateEntry(cluster string, estimate time.Duration) string {
	ms := strconv.FormatFloat(float64(estimate.Microseconds())/1000, 'f', 1, 64)
	return telemetry.Truncate(cluster, maxClusterBytes) + "=" + ms + "ms"
}
