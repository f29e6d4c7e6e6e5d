// Package tracing is the gateway's part of tracing: the attribute keys its spans carry (see
// docs/gateway.md#tracing), its instrumentation scope, service name and metric namespace, and
// the helpers of its scheduling spans. The provider, export queue, tracer and bounded attribute
// helpers are the shared telemetry/tracing package.
package tracing

import (
	"strconv"

	"go.opentelemetry.io/otel/trace"

	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// Scope is the instrumentation scope of the gateway's spans.
const Scope = "github.com/switchyard-dev/switchyard/cluster-gateway"

// Attribute keys the gateway's spans carry (see docs/gateway.md#tracing).
const (
	AttrCluster        = telemetry.AttrCluster
	AttrRegion         = telemetry.AttrRegion
	AttrRequestID      = "switchyard.request_id"
	AttrModel          = "gen_ai.request.model"
	AttrBaseModel      = "switchyard.base_model"
	AttrPriority       = "switchyard.priority"
	AttrTenant         = "switchyard.tenant"
	AttrPromptTokens   = "switchyard.prompt_tokens_estimate"
	AttrEndpoint       = "switchyard.endpoint"
	AttrAddress        = "server.address"
	AttrProfile        = "switchyard.profile"
	AttrPicker         = "switchyard.picker"
	AttrReason         = "switchyard.reason"
	AttrCandidates     = "switchyard.candidates"
	AttrTopScores      = "switchyard.top_scores"
	AttrQueued         = "switchyard.queued"
	AttrRescheduled    = "switchyard.rescheduled"
	AttrAttempt        = "switchyard.attempt"
	AttrStatus         = telemetry.AttrStatus
	AttrMethod         = "http.request.method"
	AttrRoute          = "http.route"
	AttrTTFT           = "switchyard.ttft_ms"
	AttrITL            = "switchyard.mean_itl_ms"
	AttrInputTokens    = "gen_ai.usage.input_tokens"
	AttrOutputTokens   = "gen_ai.usage.output_tokens"
	AttrCachedTokens   = "switchyard.usage.cached_tokens"
	AttrStreamed       = "switchyard.streamed"
	AttrErrorType      = telemetry.AttrErrorType
	AttrQueueOutcome   = "switchyard.queue.outcome"
	EventFirstToken    = "first_token"
	maxScoreEntryBytes = 64
)

// MaxTopScores bounds the candidates whose scores a scheduling span lists.
const MaxTopScores = 5

// DefaultConfig returns the gateway's tracing defaults: the shared ones with the gateway's
// service name (cluster-gateway), scope and metric namespace (switchyard_gateway_trace_*), and
// its callers' sampling decisions respected: its ports face routers, Envoy and in-cluster
// clients, not the internet (docs/gateway.md#tracing says when to choose ratio or ignore).
func DefaultConfig() telemetry.Config {
	c := telemetry.DefaultConfig()
	c.ServiceName, c.Scope, c.MetricNamespace = "cluster-gateway", Scope, "switchyard_gateway"
	c.RemoteParent = telemetry.RemoteParentRespect
	return c
}

// NewTracer returns a tracer over tp with the gateway's scope (nil tp: a disabled one).
func NewTracer(tp trace.TracerProvider) *telemetry.Tracer { return telemetry.NewTracer(tp, Scope) }

// ScoreEntry formats one candidate's score for AttrTopScores: "name=0.812", the name bounded.
func ScoreEntry(name string, score float64) string {
	return telemetry.Truncate(name, maxScoreEntryBytes) + "=" + strconv.FormatFloat(score, 'f', 3, 64)
}
