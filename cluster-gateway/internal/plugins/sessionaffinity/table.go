package sessionaffinity

import (
	"sync"
	"time"
)

// entryBytes is the memory one session entry is charged beyond its address: its node in the
// table's slice, its slot in the key map and the head slot of its address's list, rounded up.
const entryBytes = 96

// Why a session left the table (the reason label of the eviction counter).
const (
	evictCapacity = iota // the table was full (entries or bytes): the least recently used went
	evictExpired         // not used for the TTL
	evictRemoved         // its endpoint left the pool
	evictReasons
)

var evictNames = [evictReasons]string{"capacity", "expired", "endpoint_removed"}

// table is a bounded LRU of sessions: key (a hash of tenant and session id) → the address of the
// endpoint that served the session last. It is bounded in entries and in bytes, an entry expires
// ttl after it was last recorded, and every entry of an address can be dropped at once (each
// address's entries are linked in a list of their own). Nodes live in a slice linked by index,
// so a full table records and evicts without allocating. It is safe for concurrent use.
type table struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int64
	ttl        time.Duration

	pos        map[uint64]int32
	byAddr     map[string]int32 // the first entry of each address's list
	nodes      []node
	free       []int32
	head, tail int32 // head is the most recently recorded; -1 when empty
	bytes      int64
	evicted    [evictReasons]uint64
}

type node struct {
	key          uint64
	addr         string
	expires      int64 // unix nanoseconds
	prev, next   int32 // recency list
	aprev, anext int32 // the address's list
}

func newTable(maxEntries int, maxBytes int64, ttl time.Duration) *table {
	return &table{maxEntries: maxEntries, maxBytes: maxBytes, ttl: ttl, pos: make(map[uint64]int32),
		byAddr: make(map[string]int32), head: -1, tail: -1}
}

// lookup returns the address that served session key last, unless the entry has expired at now
// (it is dropped then).
func (t *table) lookup(key uint64, now time.Time) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.pos[key]
	if !ok {
		return "", false
	}
	if t.nodes[i].expires <= now.UnixNano() {
		t.remove(i, evictExpired)
		return "", false
	}
	return t.nodes[i].addr, true
}

// record notes that addr serves session key as of now and returns the address that served it
// before ("" for a new or expired session). An entry whose address alone exceeds the byte bound
// is not kept.
func (t *table) record(key uint64, addr string, now time.Time) (prev string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	nowNs := now.UnixNano()
	if i, ok := t.pos[key]; ok {
		n := &t.nodes[i]
		if n.expires > nowNs {
			prev = n.addr
		}
		if n.addr != addr {
			t.unlinkAddr(i)
			t.bytes += int64(len(addr)) - int64(len(n.addr))
			n.addr = addr
			t.linkAddr(i)
		}
		n.expires = nowNs + int64(t.ttl)
		t.unlink(i)
		t.pushFront(i)
		t.shrink(nowNs, i)
		return prev
	}
	cost := entryBytes + int64(len(addr))
	if cost > t.maxBytes || t.maxEntries <= 0 {
		return ""
	}
	t.expire(nowNs)
	for t.tail >= 0 && (len(t.pos) >= t.maxEntries || t.bytes+cost > t.maxBytes) {
		t.remove(t.tail, evictCapacity)
	}
	i := t.alloc(node{key: key, addr: addr, expires: nowNs + int64(t.ttl), prev: -1, next: -1, aprev: -1, anext: -1})
	t.pos[key] = i
	t.bytes += cost
	t.pushFront(i)
	t.linkAddr(i)
	return ""
}

// shrink evicts the least recently used entries other than keep while the table is over its
// byte bound (a session moved to a longer address).
func (t *table) shrink(nowNs int64, keep int32) {
	t.expire(nowNs)
	for t.bytes > t.maxBytes && t.tail >= 0 && t.tail != keep {
		t.remove(t.tail, evictCapacity)
	}
}

// expire drops the expired entries at the old end of the recency list. Every entry lives ttl
// from its last record and the list is in record order, so they are all there.
func (t *table) expire(nowNs int64) {
	for t.tail >= 0 && t.nodes[t.tail].expires <= nowNs {
		t.remove(t.tail, evictExpired)
	}
}

// removeAddr drops every session of addr.
func (t *table) removeAddr(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, ok := t.byAddr[addr]; ok; i, ok = t.byAddr[addr] {
		t.remove(i, evictRemoved)
	}
}

// size returns the number of sessions held and the bytes they are charged.
func (t *table) size() (entries int, bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pos), t.bytes
}

// evictions returns the entries dropped so far, by reason.
func (t *table) evictions() [evictReasons]uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.evicted
}

func (t *table) remove(i int32, why int) {
	n := &t.nodes[i]
	t.unlink(i)
	t.unlinkAddr(i)
	delete(t.pos, n.key)
	t.bytes -= entryBytes + int64(len(n.addr))
	t.evicted[why]++
	*n = node{}
	t.free = append(t.free, i)
}

func (t *table) alloc(n node) int32 {
	if k := len(t.free); k > 0 {
		i := t.free[k-1]
		t.free = t.free[:k-1]
		t.nodes[i] = n
		return i
	}
	t.nodes = append(t.nodes, n)
	return int32(len(t.nodes) - 1)
}

func (t *table) unlink(i int32) {
	n := &t.nodes[i]
	if n.prev >= 0 {
		t.nodes[n.prev].next = n.next
	} else {
		t.head = n.next
	}
	if n.next >= 0 {
		t.nodes[n.next].prev = n.prev
	} else {
		t.tail = n.prev
	}
	n.prev, n.next = -1, -1
}

func (t *table) pushFront(i int32) {
	t.nodes[i].prev, t.nodes[i].next = -1, t.head
	if t.head >= 0 {
		t.nodes[t.head].prev = i
	}
	t.head = i
	if t.tail < 0 {
		t.tail = i
	}
}

// linkAddr puts i at the front of its address's list.
func (t *table) linkAddr(i int32) {
	n := &t.nodes[i]
	n.aprev, n.anext = -1, -1
	if first, ok := t.byAddr[n.addr]; ok {
		n.anext = first
		t.nodes[first].aprev = i
	}
	t.byAddr[n.addr] = i
}

// unlinkAddr takes i out of its address's list, deleting the list when it empties.
func (t *table) unlinkAddr(i int32) {
	n := &t.nodes[i]
	if n.anext >= 0 {
		t.nodes[n.anext].aprev = n.aprev
	}
	switch {
	case n.aprev >= 0:
		t.nodes[n.aprev].anext = n.anext
	case n.anext >= 0:
		t.byAddr[n.addr] = n.anext
	default:
		delete(t.byAddr, n.addr)
	}
	n.aprev, n.anext = -1, -1
}
