package framework

import "sync"

// PrefixMatchKey is the CycleState key under which the prefix-cache scorer stores its
// *PrefixMatch for the scorers after it (the predicted-TTFT scorer) and the PreRequest hooks.
const PrefixMatchKey = "prefix-cache-scorer/match"

// PrefixTokensPerBlock is the approximate number of tokens in one hashed prompt block (64 bytes,
// gossip/prefix, at about four characters a token).
const PrefixTokensPerBlock = 16

// PrefixMatch is one cycle's prefix-match result: Blocks[i] is how many leading blocks of the
// prompt, of Total, candidate Endpoints[i] (in the order the scorers received them) is believed
// to hold in its prefix cache. The producer fills it; readers do not modify it. Get one with
// NewPrefixMatch; CycleState.Reset releases it to its pool when the cycle ends.
type PrefixMatch struct {
	Total     int
	Blocks    []int32
	Endpoints []Endpoint
}

var prefixMatchPool = sync.Pool{New: func() any { return new(PrefixMatch) }}

// pooling is false in builds with the nopool tag (nopool.go), which bypass the package's pools
// so that benchmarks can measure what they save.
var pooling = true

// NewPrefixMatch returns an empty PrefixMatch from a pool; its Blocks keep their capacity.
func NewPrefixMatch() *PrefixMatch {
	if !pooling {
		return new(PrefixMatch)
	}
	m := prefixMatchPool.Get().(*PrefixMatch)
	m.Total, m.Blocks, m.Endpoints = 0, m.Blocks[:0], nil
	return m
}

// Release returns m to its pool when the cycle ends (Releaser).
func (m *PrefixMatch) Release() {
	m.Endpoints = nil
	if pooling {
		prefixMatchPool.Put(m)
	}
}

// BlocksFor returns the matched block count of endpoint e, 0 when e was not a candidate or m
// is nil.
func (m *PrefixMatch) BlocksFor(e Endpoint) int {
	if m == nil {
		return 0
	}
	for i, c := range m.Endpoints {
		if c == e {
			return int(m.Blocks[i])
		}
	}
	return 0
}

// TokensFor returns the prompt tokens endpoint e holds in its prefix cache (its matched blocks),
// 0 when e was not a candidate or m is nil.
func (m *PrefixMatch) TokensFor(e Endpoint) int { return m.BlocksFor(e) * PrefixTokensPerBlock }

// ReadPrefixMatch returns the PrefixMatch a prefix-cache scorer stored in cs this cycle, or nil.
func ReadPrefixMatch(cs *CycleState) *PrefixMatch {
	if cs == nil {
		return nil
	}
	v, ok := cs.Read(PrefixMatchKey)
	if !ok {
		return nil
	}
	m, _ := v.(*PrefixMatch)
	return m
}
