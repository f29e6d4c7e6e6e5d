// Package sessions is the session table of session affinity, the same at both tiers (the
// gateway's session-affinity-scorer: session → pod address; the router: session → cluster): a
// bounded LRU from a session key to the value that served the session last. It is bounded in
// entries and in bytes, an entry expires TTL after it was last recorded, and with
// Config.IndexValues every entry of one value can be dropped at once (a pod that left the pool).
// Keys are a hash, seeded per table, of the tenant and the session id, so one tenant naming
// another's session id finds nothing of the other's. Nodes live in a slice linked by index, so a
// full table records and evicts without allocating.
package sessions

import (
	"encoding/binary"
	"errors"
	"hash/maphash"
	"sync"
	"time"
)

// The memory one entry is charged beyond its value's bytes: its node in the table's slice and
// its slot in the key map, rounded up; with Config.IndexValues also the head slot of its value's
// list.
const (
	EntryBytes        = 80
	IndexedEntryBytes = 96
)

// Config bounds a Table.
type Config struct {
	// TTL is how long a session is remembered after its last Record. Must be positive.
	TTL time.Duration
	// MaxEntries bounds the sessions remembered. Must be positive.
	MaxEntries int
	// MaxBytes bounds the memory they are charged (EntryBytes, or IndexedEntryBytes, plus the
	// value's length each). Must hold one entry.
	MaxBytes int64
	// IndexValues links each value's entries in a list of their own, for RemoveValue.
	IndexValues bool
}

// entryBytes is the fixed charge of one entry under c.
func (c Config) entryBytes() int64 {
	if c.IndexValues {
		return IndexedEntryBytes
	}
	return EntryBytes
}

// Validate reports the first field out of range.
func (c Config) Validate() error {
	switch {
	case c.TTL <= 0:
		return errors.New("sessions: Config.TTL must be positive")
	case c.MaxEntries <= 0:
		return errors.New("sessions: Config.MaxEntries must be positive")
	case c.MaxBytes < c.entryBytes():
		return errors.New("sessions: Config.MaxBytes must hold one entry")
	}
	return nil
}

// Evictions counts the entries a table dropped, by reason.
type Evictions struct {
	// Capacity: the table was full (entries or bytes) and the least recently used went.
	Capacity uint64
	// Expired: not recorded for the TTL.
	Expired uint64
	// Removed: dropped with their value (RemoveValue).
	Removed uint64
}

// Table is a bounded LRU of sessions. It is safe for concurrent use.
type Table struct {
	mu    sync.Mutex
	cfg   Config
	entry int64 // cfg.entryBytes()
	seed  maphash.Seed

	pos        map[uint64]int32
	byValue    map[string]int32 // IndexValues: the first entry of each value's list
	nodes      []node
	free       []int32
	head, tail int32 // head is the most recently recorded; -1 when empty
	bytes      int64
	evicted    Evictions
}

type node struct {
	key          uint64
	value        string
	expires      int64 // unix nanoseconds
	prev, next   int32 // recency list
	vprev, vnext int32 // the value's list (IndexValues)
}

// New returns an empty table; cfg must validate.
func New(cfg Config) (*Table, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Table{cfg: cfg, entry: cfg.entryBytes(), seed: maphash.MakeSeed(), pos: make(map[uint64]int32),
		head: -1, tail: -1}
	if cfg.IndexValues {
		t.byValue = make(map[string]int32)
	}
	return t, nil
}

// Key is the table key of tenant's session sessionID: a hash, seeded per table, of the two
// (the tenant length-prefixed, so no pair of strings runs into another).
func (t *Table) Key(tenant, sessionID string) uint64 {
	var h maphash.Hash
	h.SetSeed(t.seed)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(tenant)))
	_, _ = h.Write(n[:])
	_, _ = h.WriteString(tenant)
	_, _ = h.WriteString(sessionID)
	return h.Sum64()
}

// Lookup returns the value that served session key last, unless the entry has expired at now
// (it is dropped then).
func (t *Table) Lookup(key uint64, now time.Time) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.pos[key]
	if !ok {
		return "", false
	}
	if t.nodes[i].expires <= now.UnixNano() {
		t.remove(i, &t.evicted.Expired)
		return "", false
	}
	return t.nodes[i].value, true
}

// Record notes that value serves session key as of now and returns the value that served it
// before ("" for a new or expired session). An entry whose value alone exceeds the byte bound
// is not kept.
func (t *Table) Record(key uint64, value string, now time.Time) (prev string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	nowNs := now.UnixNano()
	if i, ok := t.pos[key]; ok {
		return t.update(i, value, nowNs)
	}
	cost := t.entry + int64(len(value))
	if cost > t.cfg.MaxBytes {
		return ""
	}
	t.expire(nowNs)
	for t.tail >= 0 && (len(t.pos) >= t.cfg.MaxEntries || t.bytes+cost > t.cfg.MaxBytes) {
		t.remove(t.tail, &t.evicted.Capacity)
	}
	i := t.alloc(node{key: key, value: value, expires: nowNs + int64(t.cfg.TTL), prev: -1, next: -1, vprev: -1,
		vnext: -1})
	t.pos[key] = i
	t.bytes += cost
	t.pushFront(i)
	t.linkValue(i)
	return ""
}
