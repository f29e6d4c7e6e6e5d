package main

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/switchyard-dev/switchyard/gossip"
)

// watchInterval is how often the routers' snapshots are read for marked changes and ages. The
// arrival time is the router's own ReceivedAt, so the interval bounds only how often a mark can
// be superseded unseen (the next heartbeat, a second later).
const watchInterval = 50 * time.Millisecond

// mark is a change published by one quiet gateway whose arrival at every router is timed.
type mark struct {
	node string
	seq  uint64
	at   time.Time
	seen []bool        // per router
	last time.Duration // the latest arrival so far
}

// window is what one measured window observed.
type window struct {
	arrivals []time.Duration // per (router, mark): generation → applied at the router
	lasts    []time.Duration // per mark: generation → applied at the last router
	missed   int             // (router, mark) pairs never seen before the window closed
	ages     []time.Duration // every router's summaries' ages, sampled every watchInterval
	stale    int             // of the ages, summaries the router held as stale
	marks    int
	// snapshots are the times of the routers' Snapshot calls: the gossip read the router's
	// cluster table makes for every request.
	snapshots []time.Duration
}

// measureWindow publishes a marked change of a random quiet gateway every cfg.MarkEvery for
// cfg.Window and times its arrival at every router, then waits up to twice the summary TTL
// for the stragglers.
func measureWindow(ctx context.Context, cfg Config, gws []*gateway, routers []*gossip.Node) window {
	var quiet []*gateway
	for _, g := range gws {
		if !g.busy {
			quiet = append(quiet, g)
		}
	}
	rng := rand.New(rand.NewPCG(3, 5))
	var w window
	var pending []*mark
	end := time.Now().Add(cfg.stretch(cfg.Window))
	nextMark := time.Now()
	grace := end.Add(cfg.stretch(6 * time.Second))
	tick := time.NewTicker(cfg.stretch(watchInterval))
	defer tick.Stop()
	for {
		now := time.Now()
		if now.Before(end) && !now.Before(nextMark) && len(quiet) > 0 {
			g := quiet[rng.IntN(len(quiet))]
			if seq, at, err := g.mark(now); err == nil {
				pending = append(pending, &mark{node: g.node.Name(), seq: seq, at: at, seen: make([]bool, len(routers))})
				w.marks++
			}
			nextMark = nextMark.Add(cfg.stretch(cfg.MarkEvery))
		}
		pending = w.observe(routers, pending, now.Before(end))
		if (len(pending) == 0 && !now.Before(end)) || now.After(grace) {
			break
		}
		select {
		case <-ctx.Done():
			return w
		case <-tick.C:
		}
	}
	for _, m := range pending {
		for _, seen := range m.seen {
			if !seen {
				w.missed++
			}
		}
	}
	slices.Sort(w.arrivals)
	slices.Sort(w.lasts)
	slices.Sort(w.ages)
	slices.Sort(w.snapshots)
	return w
}

// observe reads every router's snapshot once: marks it now holds (a summary at or past the
// mark's sequence) are timed by the router's arrival time; while sampling, every summary's age
// is recorded. It returns the marks still pending somewhere.
func (w *window) observe(routers []*gossip.Node, pending []*mark, sample bool) []*mark {
	for ri, r := range routers {
		held := map[string]gossip.Summary{}
		t0 := time.Now()
		snap := r.Snapshot()
		w.snapshots = append(w.snapshots, time.Since(t0))
		for _, s := range snap {
			if s.Node == r.Name() {
				continue
			}
			held[s.Node] = s
			if sample {
				w.ages = append(w.ages, s.Age)
				if s.Stale {
					w.stale++
				}
			}
		}
		for _, m := range pending {
			s, ok := held[m.node]
			if m.seen[ri] || !ok || s.Summary.GetSequence() < m.seq {
				continue
			}
			m.seen[ri] = true
			d := max(s.ReceivedAt.Sub(m.at), 0)
			w.arrivals = append(w.arrivals, d)
			m.last = max(m.last, d)
		}
	}
	return slices.DeleteFunc(pending, func(m *mark) bool {
		if slices.Contains(m.seen, false) {
			return false
		}
		w.lasts = append(w.lasts, m.last)
		return true
	})
}

// traffic sums the traffic counters of nodes.
func traffic(nodes []*gossip.Node) gossip.Stats {
	var t gossip.Stats
	for _, n := range nodes {
		s := n.Stats()
		t.PacketBytesSent += s.PacketBytesSent
		t.PacketBytesReceived += s.PacketBytesReceived
		t.StreamBytesSent += s.StreamBytesSent
		t.StreamBytesReceived += s.StreamBytesReceived
		t.OwnBroadcastBytes += s.OwnBroadcastBytes
		t.RelayedBroadcastBytes += s.RelayedBroadcastBytes
	}
	return t
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// quantile is the q-quantile of sorted samples (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}
