package prefixcache

import (
	"context"
	"errors"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

var errNegative = errors.New("maxPrefixBlocksToMatch, maxPrefixTokensToMatch and lruCapacityPerServer must be >= 0")

// Correction policy for observed cached-token counts.
const (
	// minCapacity is the smallest LRU a pod is shrunk to, in blocks.
	minCapacity = 64
	// missRatio: cached tokens below this fraction of the predicted prefix is a miss.
	missRatio = 0.5
	// shrinkFactor is applied to a pod's current entry count on a miss.
	shrinkFactor = 0.75
	// growFactor is applied to a full pod's capacity when a prediction holds.
	growFactor = 1.1
	// pendingGeneration bounds the remembered predictions (two generations are kept).
	pendingGeneration = 4096
)

// prediction is the prefix predicted on the chosen endpoint when a request was routed.
type prediction struct {
	ep     framework.Endpoint
	blocks int
}

// PostResponse compares the pod's reported cached tokens with the prefix predicted when the
// request was routed. Far fewer means the pod's cache keeps less than the index assumes (other
// gateways' traffic, a smaller cache), so its LRU is shrunk; a prediction that held on a full LRU
// lets it grow back toward the configured capacity.
func (s *Scorer) PostResponse(_ context.Context, req *framework.Request, info *framework.ResponseInfo) {
	p, ok := s.pending.Take(req)
	if !ok || info == nil || info.Endpoint != p.ep || info.CachedTokens < 0 || info.Status/100 != 2 || p.blocks <= 0 {
		return
	}
	e := p.ep
	want := float64(p.blocks) * TokensPerBlock
	n, capacity := s.idx.stats(e)
	switch {
	case float64(info.CachedTokens) < missRatio*want:
		s.idx.resize(e, int(float64(n)*shrinkFactor), minCapacity)
	case n >= capacity:
		s.idx.resize(e, int(float64(capacity)*growFactor)+1, minCapacity)
	}
}
