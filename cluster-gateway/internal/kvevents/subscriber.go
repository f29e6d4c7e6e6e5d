package kvevents

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// EndpointSource is the gateway's endpoint set (the datastore). It must be safe for concurrent
// use.
type EndpointSource interface {
	Endpoints() []framework.Endpoint
	OnRemove(f func(addr string))
}

// seqKey names one event stream: a pod and its data-parallel rank (each rank publishes its own
// sequence).
type seqKey struct {
	addr string
	rank int64
}

// Subscriber is the SUB socket and the loop that applies what arrives to the Index.
type Subscriber struct {
	cfg    Config
	idx    *Index
	src    EndpointSource
	log    *slog.Logger
	m      *metrics
	sock   zmq4.Socket
	forget func()
	now    func() time.Time

	mu       sync.Mutex
	seqs     map[seqKey]uint64
	res      *resolver
	resolved time.Time
	warned   map[string]time.Time // reason -> last warning, to rate-limit the log
}

// New binds the SUB socket at cfg.Endpoint and returns the subscriber feeding idx; Run applies
// the messages. Endpoints leaving src are dropped from idx.
func New(
	cfg Config,
	idx *Index,
	src EndpointSource,
	logger *slog.Logger,
	reg prometheus.Registerer,
) (*Subscriber, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Subscriber{cfg: cfg, idx: idx, src: src, log: logger, now: time.Now,
		seqs: make(map[seqKey]uint64), res: newResolver(nil), warned: make(map[string]time.Time)}
	s.m = newMetrics(idx, reg)
	addr, _ := ListenAddr(cfg.Endpoint) // validated
	lim := &guardLimits{maxMessage: cfg.MaxMessageBytes, maxFrames: cfg.MaxFrames,
		maxConns: cfg.MaxConnections, handshake: cfg.HandshakeTimeout, refused: s.refused}
	ep, forget := guardEndpoint(addr, lim)
	s.forget = forget
	s.sock = zmq4.NewSub(context.Background(), zmq4.WithAutomaticReconnect(false), zmq4.WithLogger(discardLog))
	if err := s.sock.SetOption(zmq4.OptionSubscribe, cfg.TopicPrefix); err != nil {
		forget()
		_ = s.sock.Close()
		return nil, fmt.Errorf("kv events subscribe: %w", err)
	}
	if err := s.sock.Listen(ep); err != nil {
		forget()
		_ = s.sock.Close()
		return nil, fmt.Errorf("kv events listen %s: %w", cfg.Endpoint, err)
	}
	src.OnRemove(s.removed)
	return s, nil
}

// Addr is the bound address (host:port).
func (s *Subscriber) Addr() string {
	if a := s.sock.Addr(); a != nil {
		return a.String()
	}
	return ""
}

// Close closes the socket of a subscriber that will not Run (Run closes it when it returns).
func (s *Subscriber) Close() error {
	s.forget()
	return s.sock.Close()
}

// Run applies received messages until ctx ends, then closes the socket.
func (s *Subscriber) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { _ = s.sock.Close() })
	defer stop()
	defer s.forget()
	dec := NewDecoder(Limits{MaxEvents: s.cfg.MaxEventsPerBatch, MaxHashes: s.cfg.MaxHashesPerEvent})
	var b Batch
	for {
		msg, err := s.sock.Recv()
		if ctx.Err() != nil {
			_ = s.sock.Close()
			return nil
		}
		if err != nil {
			// One connection failed (the guard closed it, or the peer went away); the others
			// keep going.
			s.log.Debug("kv events connection closed", "err", err)
			continue
		}
		if msg.Type == zmq4.CmdMsg {
			continue
		}
		s.handle(msg.Frames, dec, &b)
	}
}

// handle applies one message: [topic, sequence (8 bytes, big-endian), payload].
func (s *Subscriber) handle(frames [][]byte, dec *Decoder, b *Batch) {
	if len(frames) != 3 || len(frames[1]) != 8 {
		s.reject(resultFrames, "message is not [topic, sequence, payload]", "frames", len(frames))
		return
	}
	pod, ok := parseTopic(frames[0], s.cfg.TopicPrefix)
	if !ok {
		s.reject(resultBadTopic, "topic is not kv@<pod>@<model>", "topic", truncate(frames[0]))
		return
	}
	addr, ok := s.resolve(pod)
	if !ok {
		s.reject(resultUnknownPod, "topic names no endpoint of the pool", "pod", pod)
		return
	}
	if err := dec.Decode(frames[2], b); err != nil {
		s.reject(resultMalformed, "malformed event batch", "endpoint", addr, "err", err)
		return
	}
	s.sequence(addr, b.Rank, binary.BigEndian.Uint64(frames[1]))
	if !s.idx.Apply(addr, b) {
		s.reject(resultIndexFull, "index names as many pods as it can", "endpoint", addr)
		return
	}
	s.m.messages.WithLabelValues(resultApplied).Inc()
	s.count(addr, b)
}

// sequence checks seq against the stream's last one: a gap (messages lost) or a step back (the
// engine restarted) clears the pod's entries, since a lost BlockRemoved would leave entries
// for blocks the pod no longer holds. The batch that revealed the gap is applied afterwards.
func (s *Subscriber) sequence(addr string, rank int64, seq uint64) {
	k := seqKey{addr, rank}
	s.mu.Lock()
	last, seen := s.seqs[k]
	s.seqs[k] = seq
	s.mu.Unlock()
	if !seen || seq == last+1 {
		return
	}
	s.m.gaps.WithLabelValues(addr).Inc()
	s.idx.ClearPod(addr)
	s.warn("gap", "kv events sequence gap: endpoint's index entries cleared",
		"endpoint", addr, "rank", rank, "last", last, "seq", seq)
}

func (s *Subscriber) count(addr string, b *Batch) {
	var stored, removed, cleared int
	for i := range b.Events {
		switch b.Events[i].Kind {
		case KindStored:
			stored++
		case KindRemoved:
			removed++
		case KindCleared:
			cleared++
		}
	}
	for _, c := range [...]struct {
		kind string
		n    int
	}{{tagStored, stored}, {tagRemoved, removed}, {tagCleared, cleared}, {"unknown", b.Unknown}} {
		if c.n > 0 {
			s.m.events.WithLabelValues(addr, c.kind).Add(float64(c.n))
		}
	}
	if b.Unknown > 0 {
		s.warn("unknown", "kv events of unknown kinds skipped", "endpoint", addr, "events", b.Unknown)
	}
}

// resolve maps a topic's pod to an endpoint address, re-reading the endpoint set on a miss at
// most every ResolveEvery.
func (s *Subscriber) resolve(pod string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.res.resolve(pod); ok {
		return a, true
	}
	if now := s.now(); now.Sub(s.resolved) >= s.cfg.ResolveEvery {
		s.resolved = now
		eps := s.src.Endpoints()
		addrs := make([]string, len(eps))
		for i, e := range eps {
			addrs[i] = e.Meta().Address
		}
		s.res = newResolver(addrs)
		return s.res.resolve(pod)
	}
	return "", false
}

// removed drops an endpoint that left the set: its entries, sequences and series.
func (s *Subscriber) removed(addr string) {
	s.mu.Lock()
	s.res.remove(addr)
	for k := range s.seqs {
		if k.addr == addr {
			delete(s.seqs, k)
		}
	}
	s.mu.Unlock()
	s.idx.RemovePod(addr)
	s.m.forget(addr)
}

func (s *Subscriber) reject(result, msg string, args ...any) {
	s.m.messages.WithLabelValues(result).Inc()
	s.warn(result, "kv events message refused: "+msg, args...)
}

// refused counts a connection the guard closed or refused.
func (s *Subscriber) refused(reason string) {
	s.m.refused.WithLabelValues(reason).Inc()
	s.warn("refused/"+reason, "kv events connection refused", "reason", reason)
}

// warn logs at most one line a second for each key, so a hostile publisher cannot flood the log.
func (s *Subscriber) warn(key, msg string, args ...any) {
	s.mu.Lock()
	now := s.now()
	last, ok := s.warned[key]
	if ok && now.Sub(last) < time.Second {
		s.mu.Unlock()
		return
	}
	s.warned[key] = now
	s.mu.Unlock()
	s.log.Warn(msg, args...)
}

func truncate(b []byte) string {
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}
