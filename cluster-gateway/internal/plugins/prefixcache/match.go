package prefixcache

import (
	"sync"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// StateKey is the CycleState key under which the scorer stores its *Match for later scorers.
const StateKey = framework.PrefixMatchKey

// TokensPerBlock is the approximate number of tokens in one hashed block (64 bytes at about four
// characters a token).
const TokensPerBlock = framework.PrefixTokensPerBlock

// Match is one cycle's prefix-match result (framework.PrefixMatch, which other plugins read).
type Match = framework.PrefixMatch

// ReadMatch returns the Match stored in cs by a prefix-cache-scorer in this cycle, or nil.
func ReadMatch(cs *framework.CycleState) *Match { return framework.ReadPrefixMatch(cs) }

// scratchPool holds match's pod id -> matched length scratch (-1 = candidate not yet assigned),
// all zero between uses.
var scratchPool = sync.Pool{New: func() any { return new([]int32) }}

// pooling is false in builds with the nopool tag (nopool.go), which bypass the package's pools
// so that benchmarks can measure what they save.
var pooling = true

// match fills m.Blocks for eps. Because hashes are chained, a pod holding block i saw the whole
// prefix up to i, so a pod's match length is the last block it holds among the pods holding the
// first block. Walking from the last block down, each pod is assigned once; the walk stops when
// every pod holding the first block has its length.
func (x *index) match(hashes []uint64, eps []framework.Endpoint, m *Match) {
	m.Blocks = resize(m.Blocks, len(eps))
	m.Endpoints = eps
	clear(m.Blocks)
	if len(hashes) == 0 {
		return
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	first := x.owners[hashes[0]]
	if first.n == 0 {
		return
	}
	var sp *[]int32
	if pooling {
		sp = scratchPool.Get().(*[]int32)
	} else {
		sp = new([]int32)
	}
	byID := resize(*sp, len(x.slots))
	for i := int32(0); i < first.n; i++ {
		byID[first.at(i)] = -1
	}
	x.assign(hashes, byID, int(first.n))
	for i, e := range eps {
		if p := x.pods[e.Meta()]; p != nil && byID[p.id] > 0 {
			m.Blocks[i] = byID[p.id]
		}
	}
	for i := int32(0); i < first.n; i++ {
		byID[first.at(i)] = 0
	}
	*sp = byID
	if pooling {
		scratchPool.Put(sp)
	}
}

func (x *index) assign(hashes []uint64, byID []int32, remaining int) {
	for i := len(hashes) - 1; i >= 0 && remaining > 0; i-- {
		o := x.owners[hashes[i]]
		for j := int32(0); j < o.n; j++ {
			if id := o.at(j); byID[id] == -1 {
				byID[id] = int32(i + 1)
				remaining--
			}
		}
	}
}

func resize(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n, n+n/4)
	}
	return s[:n]
}
