// Package sessionaffinity provides the session-affinity-scorer plugin (Switchyard's). A request
// that names a conversation (framework.Request.SessionID: the x-session-id header, or the body's
// metadata.session_id or user) scores 1 on the endpoint that served its session last, while that
// endpoint has room by the gateway's one saturation definition (framework.Saturation), and 0
// everywhere else; a request without a session scores 0 everywhere, which changes no decision.
// It is a scorer with a weight, not a pin: the profile's other scorers can outweigh it, and a
// saturated endpoint gets no affinity at all, so the request falls back by score and the
// session moves to wherever it is served next (PreRequest records the chosen endpoint).
//
// The sessions are a bounded LRU (entries and bytes), keyed by a seeded hash of the tenant and
// the session id, so one tenant naming another's session id steers nothing of the other's; an
// entry expires when its session is not seen for the TTL, and an endpoint that leaves the pool
// takes its sessions with it.
package sessionaffinity

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/switchyard-dev/switchyard/contract/sessions"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "session-affinity-scorer"

func init() { framework.Register(Type, Factory) }

// Defaults of Params.
const (
	// DefaultSessionTTL: a conversation idle for ten minutes has likely lost its prefix-cache
	// blocks on the pod anyway (vLLM evicts freed blocks in LRU order under load).
	DefaultSessionTTL = 10 * time.Minute
	// DefaultMaxSessions: 100,000 live conversations per gateway replica.
	DefaultMaxSessions = 100_000
	// DefaultMaxBytes bounds the table's memory: 16 MiB (about 130 bytes a session).
	DefaultMaxBytes = 16 << 20
)

// Params are session-affinity-scorer's parameters. The saturation thresholds have
// saturation-filter's names and defaults; a profile gives them the filter's values so that the
// scorer and the filter agree on which pods have room.
type Params struct {
	// SessionTTL is how long a session is remembered after its last request. Default "10m".
	SessionTTL *framework.Duration `json:"sessionTTL,omitempty"`
	// MaxSessions bounds the sessions remembered. Default 100000.
	MaxSessions int `json:"maxSessions,omitempty"`
	// MaxBytes bounds the memory they are charged, in bytes. Default 16 MiB.
	MaxBytes int64 `json:"maxBytes,omitempty"`
	// QueueDepthThreshold, KVCacheUtilThreshold, MetricsStalenessThreshold and Headroom define
	// saturation (framework.Saturation): defaults 5, 0.8, "2s", 0. A pod's queue depth counts,
	// when it is not empty, what this gateway sent the pod since its scrape.
	QueueDepthThreshold       *int                `json:"queueDepthThreshold,omitempty"`
	KVCacheUtilThreshold      *float64            `json:"kvCacheUtilThreshold,omitempty"`
	MetricsStalenessThreshold *framework.Duration `json:"metricsStalenessThreshold,omitempty"`
	Headroom                  *float64            `json:"headroom,omitempty"`
}

// Outcomes of a decision for a request with a session (the outcome label of
// switchyard_gateway_session_affinity_decisions_total).
const (
	outcomeStuck = iota // sent where the session was served last
	outcomeMoved        // sent elsewhere (that pod was saturated, gone, or outscored)
	outcomeNew          // the session was not known (new, expired or evicted)
	outcomes
)

var outcomeNames = [outcomes]string{"stuck", "moved", "new"}

// Scorer is the session-affinity-scorer. It is safe for concurrent use.
type Scorer struct {
	name     string
	sat      framework.Saturation
	sessions *sessions.Table
	log      *slog.Logger
	now      func() time.Time
	desc     descs
	counts   [outcomes]atomic.Uint64
}

var (
	_ framework.Scorer     = (*Scorer)(nil)
	_ framework.PreRequest = (*Scorer)(nil)
)

// Factory builds a Scorer from Params and subscribes it to endpoint removals.
func Factory(name string, params json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	var p Params
	if err := framework.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	s, err := New(name, p)
	if err != nil {
		return nil, err
	}
	if h != nil {
		s.log, s.now = h.Logger(), h.Now
		h.OnRemove(s.sessions.RemoveValue)
	}
	return s, nil
}

// New returns a Scorer; it validates p and applies the defaults.
func New(name string, p Params) (*Scorer, error) {
	ttl := DefaultSessionTTL
	if p.SessionTTL != nil {
		ttl = p.SessionTTL.Duration
	}
	maxSessions, maxBytes := cmpOr(p.MaxSessions, DefaultMaxSessions), cmpOr(p.MaxBytes, DefaultMaxBytes)
	switch {
	case ttl <= 0:
		return nil, fmt.Errorf("sessionTTL must be > 0, got %s", ttl)
	case maxSessions < 0:
		return nil, fmt.Errorf("maxSessions must be > 0, got %d", maxSessions)
	case maxBytes < sessions.IndexedEntryBytes:
		return nil, fmt.Errorf("maxBytes must be at least %d (one session), got %d", sessions.IndexedEntryBytes, maxBytes)
	}
	sat, err := p.saturation()
	if err != nil {
		return nil, err
	}
	table, err := sessions.New(sessions.Config{TTL: ttl, MaxEntries: maxSessions, MaxBytes: maxBytes,
		IndexValues: true})
	if err != nil {
		return nil, err
	}
	return &Scorer{name: name, sat: sat, sessions: table, log: slog.New(slog.DiscardHandler), now: time.Now,
		desc: newDescs(name)}, nil
}

func (p Params) saturation() (framework.Saturation, error) {
	s := framework.DefaultSaturation()
	if p.QueueDepthThreshold != nil {
		s.Queue = *p.QueueDepthThreshold
	}
	if p.KVCacheUtilThreshold != nil {
		s.KV = *p.KVCacheUtilThreshold
	}
	if p.MetricsStalenessThreshold != nil {
		s.Staleness = p.MetricsStalenessThreshold.Duration
	}
	if p.Headroom != nil {
		s.Headroom = *p.Headroom
	}
	return s, s.Validate()
}

// TypedName returns the plugin's type and name.
func (s *Scorer) TypedName() framework.TypedName {
	return framework.TypedName{Type: Type, Name: s.name}
}

// Key is the table key of a session: a hash, seeded per scorer, of the tenant and the session id
// (sessions.Table.Key).
func (s *Scorer) Key(tenant, sessionID string) uint64 { return s.sessions.Key(tenant, sessionID) }

// Score writes 1 for the endpoint that served req's session last when it has room, 0 for every
// other endpoint (and for all of them when the request has no known session).
func (s *Scorer) Score(
	_ context.Context,
	cs *framework.CycleState,
	req *framework.Request,
	eps []framework.Endpoint,
	scores []float64,
) {
	clear(scores)
	if req.SessionID == "" {
		return
	}
	addr, ok := s.sessions.Lookup(s.Key(req.Tenant, req.SessionID), cs.Now)
	if !ok {
		return
	}
	for i, e := range eps {
		if e.Meta().Address == addr {
			if s.hasRoom(e, cs.Now) {
				scores[i] = 1
			}
			return
		}
	}
}

// hasRoom reports whether e is not saturated at now by framework.Saturation, its queue depth
// counting what was sent to it since its scrape when the scrape showed a queue (as the default
// profile's saturation-filter counts it).
func (s *Scorer) hasRoom(e framework.Endpoint, now time.Time) bool {
	m, unfit := s.sat.Unfit(e, now)
	if unfit {
		return false
	}
	waiting := float64(m.WaitingQueue)
	if waiting > 0 {
		waiting += float64(e.InFlightSinceScrape())
	}
	return !s.sat.QueueOver(waiting)
}

// PreRequest records that the chosen endpoint (Targets[0]) now serves req's session, and counts
// whether the session stayed, moved or is new.
func (s *Scorer) PreRequest(ctx context.Context, req *framework.Request, res *framework.Result) {
	if req.SessionID == "" || res == nil || len(res.Targets) == 0 {
		return
	}
	now := s.now()
	addr := res.Targets[0].Meta().Address
	prev := s.sessions.Record(s.Key(req.Tenant, req.SessionID), addr, now)
	switch prev {
	case "":
		s.counts[outcomeNew].Add(1)
	case addr:
		s.counts[outcomeStuck].Add(1)
	default:
		s.counts[outcomeMoved].Add(1)
		s.log.DebugContext(ctx, "session moved", "request", req.ID, "from", prev, "to", addr)
	}
}

// Sessions returns the number of sessions held and the bytes they are charged.
func (s *Scorer) Sessions() (entries int, bytes int64) { return s.sessions.Size() }

func cmpOr[T int | int64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
