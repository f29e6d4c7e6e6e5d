// Package prefixcache provides the prefix-cache-scorer plugin (GIE's name and parameters). It
// scores each endpoint by the fraction of the prompt's leading blocks it is believed to hold in
// its KV cache. The belief is an index of chained block hashes (req.PrefixHashes, gossip/prefix)
// learned from routing decisions (PreRequest records the chosen pod now holds the prompt) and
// corrected by observed cached-token counts (PostResponse: when a pod reports far fewer cached
// tokens than predicted, its LRU is shrunk, evicting the oldest blocks; when predictions hold, it
// grows back). With active-active replicas the decisions of the peer replicas are learned too
// (framework.PeerPrefixes). Each pod's LRU is bounded, and pods that leave the store are dropped.
package prefixcache

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
)

// Type is the registered plugin type.
const Type = "prefix-cache-scorer"

func init() { framework.Register(Type, Factory) }

// Params are GIE v1.5.0's prefix-cache parameters.
type Params struct {
	// AutoTune sizes each pod's LRU from its reported KV capacity when known. Default true.
	AutoTune *bool `json:"autoTune,omitempty"`
	// BlockSizeTokens and BlockSize (GIE's deprecated, in characters) are accepted for
	// compatibility; blocks are fixed at 64 bytes (~16 tokens) by the shared hashing contract.
	BlockSizeTokens int `json:"blockSizeTokens,omitempty"`
	BlockSize       int `json:"blockSize,omitempty"`
	// MaxPrefixBlocksToMatch bounds the blocks compared per request. Default 256.
	MaxPrefixBlocksToMatch int `json:"maxPrefixBlocksToMatch,omitempty"`
	// MaxPrefixTokensToMatch, when > 0, overrides it as tokens / 16.
	MaxPrefixTokensToMatch int `json:"maxPrefixTokensToMatch,omitempty"`
	// LRUCapacityPerServer is each pod's LRU capacity in blocks. Default 31250.
	LRUCapacityPerServer int `json:"lruCapacityPerServer,omitempty"`
}

// Defaults (GIE's).
const (
	DefaultMaxPrefixBlocksToMatch = 256
	DefaultLRUCapacityPerServer   = 31250
)

// Scorer is the prefix-cache-scorer. It is safe for concurrent use.
type Scorer struct {
	name      string
	autoTune  bool
	maxBlocks int
	capacity  int
	idx       *index
	pending   *framework.PendingMap[prediction]
}

var (
	_ framework.CycleStateProducer = (*Scorer)(nil)
	_ framework.PreRequest         = (*Scorer)(nil)
	_ framework.PostResponse       = (*Scorer)(nil)
)

// Factory builds a Scorer from Params and subscribes it to endpoint removals.
func Factory(name string, params json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	p := Params{MaxPrefixBlocksToMatch: DefaultMaxPrefixBlocksToMatch, LRUCapacityPerServer: DefaultLRUCapacityPerServer}
	if err := framework.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	s, err := New(name, p)
	if err != nil {
		return nil, err
	}
	if h != nil {
		warnBlockSize(h.Logger(), name, p)
		h.OnRemove(func(string) { s.idx.retain(h.Endpoints()) })
		if peers, ok := framework.LookupService(h, framework.ServicePeerPrefixes).(framework.PeerPrefixes); ok {
			peers.OnPeerPrefix(s.LearnPeer)
		}
	}
	return s, nil
}

// New returns a Scorer; it validates p.
func New(name string, p Params) (*Scorer, error) {
	if p.MaxPrefixBlocksToMatch < 0 || p.MaxPrefixTokensToMatch < 0 || p.LRUCapacityPerServer < 0 {
		return nil, errNegative
	}
	s := &Scorer{name: name, autoTune: p.AutoTune == nil || *p.AutoTune, idx: newIndex()}
	s.maxBlocks = cmpOr(p.MaxPrefixBlocksToMatch, DefaultMaxPrefixBlocksToMatch)
	if p.MaxPrefixTokensToMatch > 0 {
		s.maxBlocks = max(1, p.MaxPrefixTokensToMatch/TokensPerBlock)
	}
	s.capacity = cmpOr(p.LRUCapacityPerServer, DefaultLRUCapacityPerServer)
	s.pending = framework.NewPendingMap[prediction](pendingGeneration)
	return s, nil
}

func warnBlockSize(log *slog.Logger, name string, p Params) {
	if (p.BlockSizeTokens != 0 && p.BlockSizeTokens != TokensPerBlock) ||
		(p.BlockSize != 0 && p.BlockSize != prefix.BlockSize) {
		log.Warn("prefix block size parameter ignored: blocks are 64 bytes (~16 tokens) by the shared hashing contract",
			"plugin", name, "blockSizeTokens", p.BlockSizeTokens, "blockSize", p.BlockSize)
	}
}

// TypedName returns the plugin's type and name.
func (s *Scorer) TypedName() framework.TypedName {
	return framework.TypedName{Type: Type, Name: s.name}
}

// ProducesCycleState marks the scorer as writing the *Match other scorers read.
func (s *Scorer) ProducesCycleState() {}

func (s *Scorer) hashes(req *framework.Request) []uint64 {
	h := req.PrefixHashes
	if len(h) > s.maxBlocks {
		h = h[:s.maxBlocks]
	}
	return h
}

// Score writes matched/total blocks per endpoint and stores the *Match under StateKey.
func (s *Scorer) Score(
	_ context.Context,
	cs *framework.CycleState,
	req *framework.Request,
	eps []framework.Endpoint,
	scores []float64,
) {
	hashes := s.hashes(req)
	m := framework.NewPrefixMatch()
	m.Total = len(hashes)
	s.idx.match(hashes, eps, m)
	for i := range eps {
		scores[i] = 0
		if m.Total > 0 {
			scores[i] = float64(m.Blocks[i]) / float64(m.Total)
		}
	}
	cs.Write(StateKey, m)
}

// PreRequest records that the chosen endpoint (Targets[0]) now holds the prompt's blocks.
func (s *Scorer) PreRequest(_ context.Context, req *framework.Request, res *framework.Result) {
	hashes := s.hashes(req)
	if len(hashes) == 0 || res == nil || len(res.Targets) == 0 {
		return
	}
	e := res.Targets[0]
	s.pending.Put(req, prediction{ep: e, blocks: s.idx.prefixLen(e, hashes)})
	s.idx.insert(e, s.capacityFor(e), hashes)
}

// LearnPeer records that a peer gateway replica routed a prompt with hashes to e, so e now holds
// them, as PreRequest does for this gateway's own decisions (without a prediction to correct:
// the peer corrects its own).
func (s *Scorer) LearnPeer(e framework.Endpoint, hashes []uint64) {
	if len(hashes) > s.maxBlocks {
		hashes = hashes[:s.maxBlocks]
	}
	if len(hashes) > 0 {
		s.idx.insert(e, s.capacityFor(e), hashes)
	}
}

func (s *Scorer) capacityFor(e framework.Endpoint) int {
	if m := e.Metrics(); s.autoTune && m != nil && m.KVTotalTokens() > 0 {
		return max(minCapacity, m.KVTotalTokens()/TokensPerBlock)
	}
	return s.capacity
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
