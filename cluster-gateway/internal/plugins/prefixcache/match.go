package prefixcache

import (
	"sync"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// StateKey is the CycleState key under which the scorer stores its *Match for later scorers.
const StateKey = "prefix-cache-scorer/match"

// TokensPerBlock is the approximate number of tokens in one hashed block (64 bytes at about four
// characters a token).
const TokensPerBlock = 16

// Match is one cycle's prefix-match result: Blocks[i] is how many leading blocks of the prompt
// candidate i (in the order the scorers received them) is believed to hold, of Total.
type Match struct {
	Total  int
	Blocks []int32
	eps    []*datastore.Endpoint // the candidates Blocks is aligned with
	byID   []int32               // scratch: pod id -> matched length, -1 = candidate not yet assigned
}

var matchPool = sync.Pool{New: func() any { return new(Match) }}

// Release returns the Match to its pool when the cycle ends (framework.Releaser).
func (m *Match) Release() {
	m.eps = nil
	matchPool.Put(m)
}

// BlocksFor returns the matched block count of endpoint e, 0 when e was not a candidate.
func (m *Match) BlocksFor(e *datastore.Endpoint) int {
	if m == nil {
		return 0
	}
	for i, c := range m.eps {
		if c == e {
			return int(m.Blocks[i])
		}
	}
	return 0
}

// TokensFor returns the prompt tokens endpoint e holds in its prefix cache (its matched blocks),
// 0 when e was not a candidate or m is nil.
func (m *Match) TokensFor(e *datastore.Endpoint) int { return m.BlocksFor(e) * TokensPerBlock }

// ReadMatch returns the Match stored in cs by a prefix-cache-scorer in this cycle, or nil.
func ReadMatch(cs *framework.CycleState) *Match {
	if cs == nil {
		return nil
	}
	v, ok := cs.Read(StateKey)
	if !ok {
		return nil
	}
	m, _ := v.(*Match)
	return m
}

// match fills m.Blocks for eps. Because hashes are chained, a pod holding block i saw the whole
// prefix up to i, so a pod's match length is the last block it holds among the pods holding the
// first block. Walking from the last block down, each pod is assigned once; the walk stops when
// every pod holding the first block has its length.
func (x *index) match(hashes []uint64, eps []*datastore.Endpoint, m *Match) {
	m.Blocks = resize(m.Blocks, len(eps))
	m.eps = eps
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
	m.byID = resize(m.byID, len(x.slots))
	for i := int32(0); i < first.n; i++ {
		m.byID[first.at(i)] = -1
	}
	x.assign(hashes, m.byID, int(first.n))
	for i, e := range eps {
		if p := x.pods[e]; p != nil && m.byID[p.id] > 0 {
			m.Blocks[i] = m.byID[p.id]
		}
	}
	for i := int32(0); i < first.n; i++ {
		m.byID[first.at(i)] = 0
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
