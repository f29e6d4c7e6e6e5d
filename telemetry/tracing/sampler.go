package tracing

import (
	"math/rand/v2"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// newSampler returns the sampler of cfg: a new trace is recorded by SampleRatio on its trace ID
// (one this process drew), a span whose parent is in this process follows the parent, and a
// span whose parent is a caller's traceparent follows the caller only with RemoteParentRespect.
// Otherwise it is drawn at random with SampleRatio: a trace-ID ratio would let a caller that
// picks trace IDs below the threshold have every request recorded at any ratio above 0.
// (RemoteParentIgnore never reaches the remote-parent samplers: the Tracer starts a new root.)
func newSampler(cfg Config) sdktrace.Sampler {
	root := sdktrace.TraceIDRatioBased(cfg.SampleRatio)
	if cfg.RemoteParent == RemoteParentRespect {
		return sdktrace.ParentBased(root)
	}
	remote := randomRatio{ratio: cfg.SampleRatio}
	return sdktrace.ParentBased(root,
		sdktrace.WithRemoteParentSampled(remote), sdktrace.WithRemoteParentNotSampled(remote))
}

// randomRatio records a span with probability ratio, drawn per span from a source the caller
// cannot predict, whatever its trace ID and flags; the parent's tracestate is kept.
type randomRatio struct{ ratio float64 }

var _ sdktrace.Sampler = randomRatio{}

// ShouldSample implements sdktrace.Sampler.
func (s randomRatio) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	decision := sdktrace.Drop
	if s.ratio > 0 && rand.Float64() < s.ratio { // math/rand/v2: ChaCha8, randomly seeded
		decision = sdktrace.RecordAndSample
	}
	return sdktrace.SamplingResult{
		Decision:   decision,
		Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState(),
	}
}

// Description implements sdktrace.Sampler.
func (s randomRatio) Description() string { return "RandomRatio" }
