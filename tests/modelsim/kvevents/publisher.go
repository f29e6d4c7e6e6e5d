package kvevents

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
)

// Source yields the engine's prefix-cache events (engine.Engine.TakeKVEvents).
type Source interface {
	TakeKVEvents(dst []engine.KVEvent) []engine.KVEvent
}

// Config configures a Publisher.
type Config struct {
	// Endpoint is the SUB socket to connect to, tcp://HOST:PORT (the gateway's
	// --kv-events-endpoint). Required.
	Endpoint string
	// Topic is the first frame of every message, kv@<pod>@<model> (llm-d's convention). Required.
	Topic string
	// BlockSize is the engine's block size in tokens, reported in BlockStored. Default 16.
	BlockSize int
	// Interval is how often the engine's events are collected and sent (vLLM sends a batch per
	// engine step). Default 10ms.
	Interval time.Duration
	// MaxBatchEvents bounds the events of one message; a longer backlog goes out as several.
	// Default 512.
	MaxBatchEvents int
	// Redial is the pause between connection attempts. Default 250ms.
	Redial time.Duration
	// Timeout bounds a connection attempt with its handshake, and each send. Default 2s.
	Timeout time.Duration
}

// DefaultConfig returns the defaults, without Endpoint and Topic.
func DefaultConfig() Config {
	return Config{
		BlockSize:      16,
		Interval:       10 * time.Millisecond,
		MaxBatchEvents: 512,
		Redial:         250 * time.Millisecond,
		Timeout:        2 * time.Second,
	}
}

// Validate returns an error naming the invalid field.
func (c Config) Validate() error {
	if _, err := DialAddr(c.Endpoint); err != nil {
		return err
	}
	switch {
	case !strings.HasPrefix(c.Topic, "kv@") || strings.Count(c.Topic, "@") < 2:
		return fmt.Errorf("kv events topic %q: want kv@<pod>@<model>", c.Topic)
	case c.BlockSize < 1:
		return fmt.Errorf("kv events BlockSize must be positive, got %d", c.BlockSize)
	case c.Interval <= 0 || c.Redial <= 0 || c.Timeout <= 0:
		return errors.New("kv events Interval, Redial and Timeout must be positive")
	case c.MaxBatchEvents < 1:
		return fmt.Errorf("kv events MaxBatchEvents must be positive, got %d", c.MaxBatchEvents)
	}
	return nil
}

// DialAddr turns a ZeroMQ endpoint tcp://HOST:PORT into host:port.
func DialAddr(endpoint string) (string, error) {
	rest, ok := strings.CutPrefix(endpoint, "tcp://")
	if !ok {
		return "", fmt.Errorf("kv events endpoint %q: want tcp://HOST:PORT", endpoint)
	}
	if _, _, err := net.SplitHostPort(rest); err != nil {
		return "", fmt.Errorf("kv events endpoint %q: %w", endpoint, err)
	}
	return rest, nil
}

// Topic is llm-d's topic for the pod at addr serving model: kv@<addr>@<model>.
func Topic(addr, model string) string { return "kv@" + addr + "@" + model }

// Stats counts what a Publisher did.
type Stats struct {
	// Messages and Events were sent; Dropped messages were not, for want of a connection (their
	// sequence numbers are spent, so the subscriber sees the gap and forgets this pod's blocks).
	Messages, Events, Dropped uint64
	// Connects counts the connections made.
	Connects uint64
}

// Publisher sends an engine's prefix-cache events to a SUB socket, reconnecting when the
// connection breaks.
type Publisher struct {
	cfg  Config
	addr string
	src  Source
	log  *slog.Logger
	now  func() time.Time

	seq                                  uint64
	events                               []engine.KVEvent
	payload                              []byte
	messages, sent, dropped, connections atomic.Uint64
}

// New returns a publisher of src's events. A nil logger discards logs.
func New(cfg Config, src Source, logger *slog.Logger) (*Publisher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	addr, _ := DialAddr(cfg.Endpoint) // validated
	return &Publisher{cfg: cfg, addr: addr, src: src, log: logger, now: time.Now}, nil
}

// Stats returns the publisher's counters.
func (p *Publisher) Stats() Stats {
	return Stats{Messages: p.messages.Load(), Events: p.sent.Load(), Dropped: p.dropped.Load(),
		Connects: p.connections.Load()}
}

// Run publishes until ctx ends. While it has no connection it keeps collecting the events and
// drops them, counting their messages, so the engine's backlog stays small and the subscriber
// learns of the loss from the sequence numbers.
func (p *Publisher) Run(ctx context.Context) error {
	tick := time.NewTicker(p.cfg.Interval)
	defer tick.Stop()
	var conn *pubConn
	var nextDial time.Time
	defer func() {
		if conn != nil {
			conn.close()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if conn != nil {
			select {
			case <-conn.done:
				p.log.Warn("kv events connection closed by the subscriber", "endpoint", p.cfg.Endpoint)
				conn.close()
				conn = nil
			default:
			}
		}
		if conn == nil && !p.now().Before(nextDial) {
			conn = p.connect(ctx)
			nextDial = p.now().Add(p.cfg.Redial)
		}
		if err := p.flush(conn); err != nil {
			p.log.Warn("kv events send failed; reconnecting", "endpoint", p.cfg.Endpoint, "err", err)
			conn.close()
			conn = nil
		}
	}
}

func (p *Publisher) connect(ctx context.Context) *pubConn {
	c, err := dialPub(ctx, p.addr, p.cfg.Timeout)
	if err != nil {
		p.log.Debug("kv events connect failed", "endpoint", p.cfg.Endpoint, "err", err)
		return nil
	}
	if p.connections.Add(1) == 1 {
		p.log.Info("kv events publishing", "endpoint", p.cfg.Endpoint, "topic", p.cfg.Topic)
	}
	return c
}

// flush sends (or, with no connection, drops) the engine's pending events.
func (p *Publisher) flush(conn *pubConn) error {
	p.events = p.src.TakeKVEvents(p.events[:0])
	defer func() { clear(p.events) }()
	var seq [8]byte
	for lo := 0; lo < len(p.events); lo += p.cfg.MaxBatchEvents {
		batch := p.events[lo:min(lo+p.cfg.MaxBatchEvents, len(p.events))]
		binary.BigEndian.PutUint64(seq[:], p.seq)
		p.seq++
		if conn == nil {
			p.dropped.Add(1)
			continue
		}
		ts := float64(p.now().UnixNano()) / 1e9
		p.payload = AppendBatch(p.payload[:0], ts, batch, p.cfg.BlockSize, 0)
		if err := conn.send([][]byte{[]byte(p.cfg.Topic), seq[:], p.payload}, p.cfg.Timeout); err != nil {
			p.dropped.Add(uint64(len(p.events)-lo+p.cfg.MaxBatchEvents-1) / uint64(p.cfg.MaxBatchEvents))
			p.seq += uint64(len(p.events)-lo-1) / uint64(p.cfg.MaxBatchEvents)
			return err
		}
		p.messages.Add(1)
		p.sent.Add(uint64(len(batch)))
	}
	return nil
}
