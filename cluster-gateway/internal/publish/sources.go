package publish

import (
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Sink spreads a capacity summary. *gossip.Node implements it: it stamps the summary with the
// node's identity, a sequence and the time, and returns the copy it sent. The Publisher calls it
// from one goroutine at a time and never modifies a summary after handing it over.
type Sink interface {
	Publish(s *gossipv1.CapacitySummary) (*gossipv1.CapacitySummary, error)
}

// View is the gateway's live set of model-server endpoints. datastore.Store's View implements it.
// It must be safe for concurrent use.
type View interface {
	Endpoints() []framework.Endpoint
}

// TTFTPredictor predicts the time to first token of a request of promptTokens (cachedTokens of
// them already in the pod's prefix cache) sent to e now. *predictedttft.Scorer implements it.
// It must be safe for concurrent use. Without one, the Publisher predicts from the pod's queue
// and running batch with the speeds of the SpeedSource or the configured priors.
type TTFTPredictor interface {
	Predict(e framework.Endpoint, promptTokens, cachedTokens int) time.Duration
}

// SpeedSource reports the speeds the gateway has measured on a pod: prefill in prompt tokens per
// second and decode in output tokens per second of one sequence (1/ITL). ok is false when the
// source has no estimate at all; the Publisher then uses its configured priors. It must be safe
// for concurrent use.
type SpeedSource interface {
	Speed(e framework.Endpoint) (prefillTokensPerSecond, decodeTokensPerSecond float64, ok bool)
}

// PrefixSource reports the prefix-block hashes (gossip/prefix chains) the gateway routed recently
// for a base model, at most max of them, the hottest first. It may return a slice it reuses on
// the next call: the Publisher reads it before calling again. It must be safe for concurrent
// use. Without one, summaries carry no prefix sketch.
type PrefixSource interface {
	HotPrefixes(model string, max int) []uint64
}

// QueueSource reports the requests waiting in the gateway's own flow-control queue whose base
// model or adapter is model. It must be safe for concurrent use. Without one, queue depths count
// the pods' queues only.
type QueueSource interface {
	Queued(model string) int
}
