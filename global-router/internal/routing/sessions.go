package routing

import (
	"encoding/binary"
	"hash/maphash"
	"sync"
	"time"
)

// sessionEntryBytes is the memory one session is charged beyond its cluster name: its node and its
// slot in the key map, rounded up.
const sessionEntryBytes = 80

// Session defaults (SessionConfig).
const (
	DefaultSessionTTL   = 10 * time.Minute
	DefaultMaxSessions  = 100_000
	DefaultSessionBytes = 16 << 20
)

// SessionConfig bounds a Sessions table.
type SessionConfig struct {
	// TTL is how long a session is remembered after its last request. Default 10 minutes.
	TTL time.Duration
	// MaxSessions bounds the sessions remembered. Default 100,000.
	MaxSessions int
	// MaxBytes bounds the memory they are charged. Default 16 MiB.
	MaxBytes int64
}

// DefaultSessionConfig returns a TTL of 10 minutes, 100,000 sessions, 16 MiB.
func DefaultSessionConfig() SessionConfig {
	return SessionConfig{TTL: DefaultSessionTTL, MaxSessions: DefaultMaxSessions, MaxBytes: DefaultSessionBytes}
}

// Sessions is the router's session affinity state: a bounded LRU (entries and bytes) from a
// session (a hash, seeded per table, of the tenant and the session id, so one tenant cannot
// steer another's sessions) to the cluster that served it last. Decide is still pure: the front
// door looks the session up into Request.SessionCluster and records where the request was served.
// Entries expire TTL after their session's last request. It is safe for concurrent use.
type Sessions struct {
	mu         sync.Mutex
	cfg        SessionConfig
	seed       maphash.Seed
	pos        map[uint64]int32
	nodes      []sessionNode
	free       []int32
	head, tail int32
	bytes      int64
	evicted    [2]uint64 // capacity, expired
}

type sessionNode struct {
	key        uint64
	cluster    string
	expires    int64
	prev, next int32
}

// NewSessions returns an empty table; zero fields of cfg take their defaults.
func NewSessions(cfg SessionConfig) *Sessions {
	def := DefaultSessionConfig()
	if cfg.TTL <= 0 {
		cfg.TTL = def.TTL
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = def.MaxSessions
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = def.MaxBytes
	}
	return &Sessions{cfg: cfg, seed: maphash.MakeSeed(), pos: make(map[uint64]int32), head: -1, tail: -1}
}

// Key is the table key of tenant's session sessionID.
func (s *Sessions) Key(tenant, sessionID string) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(tenant)))
	_, _ = h.Write(n[:])
	_, _ = h.WriteString(tenant)
	_, _ = h.WriteString(sessionID)
	return h.Sum64()
}

// Lookup returns the cluster that served session key last, unless it expired by now.
func (s *Sessions) Lookup(key uint64, now time.Time) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.pos[key]
	if !ok {
		return "", false
	}
	if s.nodes[i].expires <= now.UnixNano() {
		s.remove(i, 1)
		return "", false
	}
	return s.nodes[i].cluster, true
}

// Record notes that cluster served session key at now.
func (s *Sessions) Record(key uint64, cluster string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nowNs := now.UnixNano()
	exp := nowNs + int64(s.cfg.TTL)
	if i, ok := s.pos[key]; ok {
		n := &s.nodes[i]
		s.bytes += int64(len(cluster)) - int64(len(n.cluster))
		n.cluster, n.expires = cluster, exp
		s.unlink(i)
		s.pushFront(i)
		s.trim(nowNs, i)
		return
	}
	cost := sessionEntryBytes + int64(len(cluster))
	if cost > s.cfg.MaxBytes {
		return
	}
	s.trim(nowNs, -1)
	for s.tail >= 0 && (len(s.pos) >= s.cfg.MaxSessions || s.bytes+cost > s.cfg.MaxBytes) {
		s.remove(s.tail, 0)
	}
	n := sessionNode{key: key, cluster: cluster, expires: exp, prev: -1, next: -1}
	var i int32
	if k := len(s.free); k > 0 {
		i = s.free[k-1]
		s.free = s.free[:k-1]
		s.nodes[i] = n
	} else {
		s.nodes = append(s.nodes, n)
		i = int32(len(s.nodes) - 1)
	}
	s.pos[key] = i
	s.bytes += cost
	s.pushFront(i)
}

// trim drops the expired entries (all at the old end: every entry lives TTL from its last
// record), then, while over the byte bound, the least recently used but keep.
func (s *Sessions) trim(nowNs int64, keep int32) {
	for s.tail >= 0 && s.tail != keep && s.nodes[s.tail].expires <= nowNs {
		s.remove(s.tail, 1)
	}
	for s.bytes > s.cfg.MaxBytes && s.tail >= 0 && s.tail != keep {
		s.remove(s.tail, 0)
	}
}

// Size returns the sessions held and the bytes they are charged.
func (s *Sessions) Size() (entries int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pos), s.bytes
}

// Evictions returns the sessions dropped so far because the table was full and because they
// expired.
func (s *Sessions) Evictions() (capacity, expired uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.evicted[0], s.evicted[1]
}

func (s *Sessions) remove(i int32, why int) {
	n := &s.nodes[i]
	s.unlink(i)
	delete(s.pos, n.key)
	s.bytes -= sessionEntryBytes + int64(len(n.cluster))
	s.evicted[why]++
	*n = sessionNode{}
	s.free = append(s.free, i)
}

func (s *Sessions) unlink(i int32) {
	n := &s.nodes[i]
	if n.prev >= 0 {
		s.nodes[n.prev].next = n.next
	} else {
		s.head = n.next
	}
	if n.next >= 0 {
		s.nodes[n.next].prev = n.prev
	} else {
		s.tail = n.prev
	}
	n.prev, n.next = -1, -1
}

func (s *Sessions) pushFront(i int32) {
	s.nodes[i].prev, s.nodes[i].next = -1, s.head
	if s.head >= 0 {
		s.nodes[s.head].prev = i
	}
	s.head = i
	if s.tail < 0 {
		s.tail = i
	}
}
