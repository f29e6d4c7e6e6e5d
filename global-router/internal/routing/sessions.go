package routing

import (
	"time"

	"github.com/switchyard-dev/switchyard/contract/sessions"
)

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
// session (sessions.Table.Key: a hash, seeded per table, of the tenant and the session id, so one
// tenant cannot steer another's sessions) to the cluster that served it last. Decide is still
// pure: the front door looks the session up into Request.SessionCluster and records where the
// request was served. Entries expire TTL after their session's last request. It is safe for
// concurrent use.
type Sessions struct {
	*sessions.Table
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
	t, err := sessions.New(sessions.Config{TTL: cfg.TTL, MaxEntries: cfg.MaxSessions,
		MaxBytes: max(cfg.MaxBytes, sessions.EntryBytes)})
	if err != nil {
		panic(err) // unreachable: every field was given a valid value above
	}
	return &Sessions{Table: t}
}

// Evictions returns the sessions dropped so far because the table was full and because they
// expired.
func (s *Sessions) Evictions() (capacity, expired uint64) {
	e := s.Table.Evictions()
	return e.Capacity, e.Expired
}
