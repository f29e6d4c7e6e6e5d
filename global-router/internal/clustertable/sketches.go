package clustertable

import (
	"github.com/switchyard-dev/switchyard/gossip/sketch"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Prefix sketches. A summary's prefix sketch (a Bloom filter of the prefix blocks its cluster
// caches) is decoded, and its bits copied, once per summary and model, not once per request:
// summaries are immutable, and each cluster's newest is used by every request until the next one
// arrives (a gateway publishes at most four a second). A cluster keeps the decoded sketches of
// one summary, its newest chosen one; a newer summary replaces them, and those of a cluster gossip
// has forgotten are dropped at the next view.

// tokensPerBlock is the prefix contract's block size in tokens (64 bytes at ~4 bytes a token).
const tokensPerBlock = 16

// sketchCache holds one summary's decoded sketches, one per model asked about.
type sketchCache struct {
	summary *gossipv1.CapacitySummary
	models  []decodedSketch
}

type decodedSketch struct {
	model *gossipv1.ModelCapacity
	bloom *sketch.Bloom // nil when the sketch is invalid
}

// get returns the decoded sketch of the summary's model and whether it was decoded already (a
// nil filter then means an invalid sketch).
func (c *sketchCache) get(s *gossipv1.CapacitySummary, m *gossipv1.ModelCapacity) (*sketch.Bloom, bool) {
	if c.summary != s {
		return nil, false
	}
	for _, d := range c.models {
		if d.model == m {
			return d.bloom, true
		}
	}
	return nil, false
}

// put keeps the decoded sketch of the summary's model, replacing those of another summary.
func (c *sketchCache) put(s *gossipv1.CapacitySummary, m *gossipv1.ModelCapacity, b *sketch.Bloom) {
	if c.summary != s {
		c.reset(s)
	}
	if _, ok := c.get(s, m); !ok {
		c.models = append(c.models, decodedSketch{model: m, bloom: b})
	}
}

// reset forgets the decoded sketches; s is the summary the next ones will come from.
func (c *sketchCache) reset(s *gossipv1.CapacitySummary) {
	clear(c.models) // the filters' memory is freed, the slice is kept for the next summary
	c.summary, c.models = s, c.models[:0]
	if s == nil {
		c.models = nil
	}
}

// held reports whether the cache keeps a summary's sketches.
func (c *sketchCache) held() bool { return c.summary != nil }
