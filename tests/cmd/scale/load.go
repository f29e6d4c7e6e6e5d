package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/switchyard-dev/switchyard/gossip"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Publication paces, as cluster-gateway's publisher: a significant change at most every 250 ms,
// otherwise a heartbeat every second.
const (
	changeInterval    = 250 * time.Millisecond
	heartbeatInterval = time.Second
)

// gateway is the generated load of one simulated cluster gateway: its summary's figures move in
// a random walk, every publication when it is busy, and only when marked otherwise.
type gateway struct {
	node      *gossip.Node
	busy      bool
	heartbeat time.Duration // heartbeatInterval, dilated

	mu      sync.Mutex
	rng     *rand.Rand
	summary *gossipv1.CapacitySummary
	last    time.Time // last publication
}

// newGateway returns gateway i's load: cfg.Models models (of a catalogue twice that size, so
// that clusters serve different sets) with cfg.Adapters adapters each.
func newGateway(cfg Config, i int, node *gossip.Node, busy bool) *gateway {
	s := &gossipv1.CapacitySummary{}
	for m := range cfg.Models {
		id := (i + m) % (2 * cfg.Models)
		mc := &gossipv1.ModelCapacity{
			Name:                   fmt.Sprintf("org-%d/model-%02d-8b-instruct", id%4, id),
			ReadyPods:              uint32(4 + (i+m)%12),
			TotalKvTokens:          3_200_000,
			FreeKvTokens:           1_600_000,
			QueueDepth:             2,
			Running:                40,
			PredictedTtftMs:        85,
			MeanPredictedTtftMs:    110,
			PrefillTokensPerSecond: 240_000,
			DecodeTokensPerSecond:  9_000,
		}
		for a := range cfg.Adapters {
			mc.Adapters = append(mc.Adapters, &gossipv1.AdapterCapacity{
				Name:         fmt.Sprintf("tenant-%02d-lora-%02d", a, id),
				ResidentPods: uint32(1 + a%4),
			})
		}
		s.Models = append(s.Models, mc)
	}
	return &gateway{node: node, busy: busy, heartbeat: cfg.stretch(heartbeatInterval),
		rng: rand.New(rand.NewPCG(uint64(i), 17)), summary: s}
}

// move takes one random-walk step of every model's moving figures (beyond the rounding the
// gossip precision applies, so every step is a real change).
func (g *gateway) move() {
	for _, m := range g.summary.Models {
		m.QueueDepth = uint32(max(0, int(m.QueueDepth)+g.rng.IntN(7)-3))
		m.Running = uint32(max(1, int(m.Running)+g.rng.IntN(9)-4))
		free := int64(m.FreeKvTokens) + (g.rng.Int64N(11)-5)*50_000
		m.FreeKvTokens = uint64(min(max(free, 0), int64(m.TotalKvTokens)))
		m.PredictedTtftMs = max(20, m.PredictedTtftMs*(0.85+0.3*g.rng.Float32()))
		m.MeanPredictedTtftMs = m.PredictedTtftMs * 1.3
		for _, a := range m.Adapters {
			a.QueueDepth = uint32(g.rng.IntN(4))
		}
	}
}

// tick publishes when one is due: every tick when busy, a heartbeat a second after the last
// publication otherwise.
func (g *gateway) tick(now time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.busy && now.Sub(g.last) < g.heartbeat {
		return nil
	}
	if g.busy {
		g.move()
	}
	_, _, err := g.publish(now)
	return err
}

// mark publishes a change at once and returns its sequence and generation time.
func (g *gateway) mark(now time.Time) (uint64, time.Time, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.move()
	return g.publish(now)
}

func (g *gateway) publish(now time.Time) (uint64, time.Time, error) {
	sent, err := g.node.Publish(g.summary)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("scale: publish %s: %w", g.node.Name(), err)
	}
	g.last = now
	return sent.GetSequence(), time.Unix(0, sent.GetGeneratedAtUnixNano()), nil
}

// runLoad ticks every gateway every changeInterval (dilated), spread evenly over the interval, until ctx
// is done.
func runLoad(ctx context.Context, cfg Config, gws []*gateway) error {
	const slots = 25
	t := time.NewTicker(cfg.stretch(changeInterval) / slots)
	defer t.Stop()
	for slot := 0; ; slot = (slot + 1) % slots {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			for i := slot; i < len(gws); i += slots {
				if err := gws[i].tick(now); err != nil {
					return err
				}
			}
		}
	}
}
