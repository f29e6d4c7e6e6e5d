package gossip

import (
	"fmt"
	"math"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

func TestPacerSpend(t *testing.T) {
	t0 := time.Unix(1_000, 0)
	type spend struct {
		at   time.Duration
		cost float64
	}
	tests := []struct {
		name   string
		rate   float64
		spends []spend
		wait   time.Duration // nextAt after the last spend, from its time
	}{
		{"no budget", math.Inf(1), []spend{{0, 1e9}}, 0},
		{"nothing left for deltas", -5, []spend{{0, 10}}, maxHold},
		{"a full bucket sends at once", 1000, []spend{{0, 999}}, 0},
		{"burst spent: wait for the debt", 1000, []spend{{0, 900}, {0, 300}}, 200 * time.Millisecond},
		{"the bucket refills at the rate", 1000, []spend{{0, 1000}, {100 * time.Millisecond, 150}}, 50 * time.Millisecond},
		{"it saves up at most budgetBurst", 1000, []spend{{0, 1000}, {10 * time.Second, 1100}}, 100 * time.Millisecond},
		{"a debt never holds more than maxHold", 100, []spend{{0, 100}, {0, 1000}}, maxHold},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p pacer
			var last time.Time
			for _, s := range tt.spends {
				last = t0.Add(s.at)
				p.spend(last, s.cost, tt.rate)
			}
			if got := p.nextAt.Sub(last); tt.rate != math.Inf(1) && got != tt.wait {
				t.Errorf("next delta %v after the last, want %v", got, tt.wait)
			}
			if tt.rate == math.Inf(1) && !p.nextAt.IsZero() {
				t.Errorf("next delta at %v, want no wait", p.nextAt)
			}
		})
	}
}

// budgetNode returns a gateway "gw" in a pool of 100 alive members, `gateways` of them gateways
// (gw among them), with the given budget.
func budgetNode(t *testing.T, clock *fakeClock, gateways, budget int) *Node {
	t.Helper()
	cfg := DefaultLANConfig()
	cfg.NodeName, cfg.Role, cfg.Cluster, cfg.Region, cfg.AdvertiseURL, cfg.Insecure = "gw", RoleGateway, "c1", "r1", "http://gw:8080", true
	cfg.Now, cfg.BroadcastBudget = clock.Now, budget
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gw, _ := encodeMetadata(Metadata{Role: RoleGateway, Cluster: "c", Region: "r1", URL: "http://x:8080"})
	router, _ := encodeMetadata(Metadata{Role: RoleRouter, Region: "r1"})
	n.peers.update(n, &memberlist.Node{Name: "gw", Addr: net.IPv4(10, 0, 0, 1), Port: 7946, Meta: n.meta}, StateAlive)
	for i := 1; i < 100; i++ {
		meta := router
		if i < gateways {
			meta = gw
		}
		n.peers.update(
			n,
			&memberlist.Node{Name: fmt.Sprintf("peer-%02d", i), Addr: net.IPv4(10, 0, 1, byte(i)), Port: 7946, Meta: meta},
			StateAlive,
		)
	}
	return n
}

// A gateway whose deltas fit its share of the budget publishes every one at once; one that would
// exceed it sends fewer, about as many as its share pays for and never fewer than one per
// maxHold; and a receiver always ends with the publisher's latest summary: held changes are
// delayed, never lost.
func TestBudgetPacesDeltas(t *testing.T) {
	tests := []struct {
		name             string
		gateways, budget int
		changing         int
		paced            bool
	}{
		{"single gateway", 1, 18_000, 20, false},
		{"10 gateways, every figure changing", 10, 18_000, 20, false},
		{"20 gateways, 2 busy models", 20, 18_000, 2, false},
		{"20 gateways, every figure changing", 20, 18_000, 20, true},
		{"60 gateways: held at most maxHold", 60, 18_000, 20, true},
		{"budget off", 60, 0, 20, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{now: time.Unix(1_000_000, 0)}
			n := budgetNode(t, clock, tt.gateways, tt.budget)
			receiver := newStore(1 << 20)
			const publications, warmup = 80, 8 // 20 s at 4 a second, the first 2 s not counted
			var last *gossipv1.CapacitySummary
			var sentBytes, sent, heldBefore float64
			stale := 0 // deltas sent after their publication: the caller publishes steadily, so none
			for i := 0; i < publications; i++ {
				out, err := n.Publish(simSummary(tt.changing, uint32(i*7)))
				if err != nil {
					t.Fatal(err)
				}
				last = out
				for range 5 { // gossip rounds every 50 ms until the next publication
					n.flushHeld()
					deltas, bytes, late := drainStale(t, n, receiver)
					if i >= warmup {
						sent += float64(deltas)
						sentBytes += float64(bytes)
						stale += late
					}
					clock.Advance(50 * time.Millisecond)
				}
				if i == warmup-1 {
					heldBefore = testutil.ToFloat64(n.metrics.deltas.WithLabelValues("held"))
				}
			}
			clock.Advance(maxHold)
			n.flushHeld()
			drainTo(t, n, receiver)
			if got := receiver.entriesCopy()["gw"].summary; !proto.Equal(got, last) {
				t.Fatalf("receiver holds sequence %d, want the latest, %d", got.GetSequence(), last.GetSequence())
			}
			secs := float64(publications-warmup) / 4
			held := testutil.ToFloat64(n.metrics.deltas.WithLabelValues("held")) - heldBefore
			if !tt.paced {
				if held != 0 || sent != publications-warmup {
					t.Fatalf("%v deltas held back, %v of %d sent: want none held", held, sent, publications-warmup)
				}
				return
			}
			share := float64(
				tt.budget,
			)/float64(
				tt.gateways,
			) - float64(
				n.pub.baseMsgs*n.sendsPerNode(n.queue),
			)/n.cfg.FullSummaryInterval.Seconds()
			perSecond := sent / secs
			if held == 0 || perSecond > 3.5 || perSecond < 1/maxHold.Seconds()-0.1 {
				t.Fatalf("%.2f deltas a second, %v held: want paced, at least %.1f a second", perSecond, held, 1/maxHold.Seconds())
			}
			if stale > 0 {
				t.Errorf("%d held deltas sent late; with a steady caller each should give way to the next publication", stale)
			}
			if rate := sentBytes / secs; share > 0 && perSecond > 1/maxHold.Seconds()+0.1 && rate > share*1.05 {
				t.Fatalf("deltas take %.0f B/s per node, share %.0f", rate, share)
			}
		})
	}
}

// Full summaries are never held back: a change of models while a delta is held sends the full
// summary at once, which supersedes the held delta. A heartbeat after a quiet second goes at once
// too, to the heartbeat queue.
func TestBudgetNeverHoldsFullsOrHeartbeats(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	n := budgetNode(t, clock, 60, 18_000)
	receiver := newStore(1 << 20)
	publish := func(s *gossipv1.CapacitySummary) *gossipv1.CapacitySummary {
		t.Helper()
		out, err := n.Publish(s)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	publish(simSummary(20, 0)) // the first full summary
	deliverQueued(t, n, receiver)
	clock.Advance(250 * time.Millisecond)
	publish(simSummary(20, 7)) // a delta, sent: the bucket starts full
	deliverQueued(t, n, receiver)
	for i := 2; n.pub.held == nil && i < 10; i++ {
		clock.Advance(250 * time.Millisecond)
		publish(simSummary(20, uint32(7*i)))
	}
	if n.pub.held == nil {
		t.Fatal("no delta held back at 60 gateways")
	}
	grown := simSummary(20, 100)
	grown.Models = append(grown.Models, &gossipv1.ModelCapacity{Name: "new-model"})
	full := publish(grown)
	if n.pub.held != nil || n.pub.base != full {
		t.Fatal("a change of models was held back, want a full summary at once")
	}
	deliverQueued(t, n, receiver)
	if got := receiver.entriesCopy()["gw"].summary; !proto.Equal(got, full) {
		t.Fatal("receiver does not hold the full summary")
	}
	clock.Advance(250 * time.Millisecond)
	publish(grown) // a delta that spends the rest of the bucket
	clock.Advance(heartbeatGap)
	beat := publish(grown)
	if n.pub.held != nil || n.beatQueue.NumQueued() == 0 {
		t.Fatal("a heartbeat after a quiet second was held back or not queued as a heartbeat")
	}
	deliverQueued(t, n, receiver)
	if got := receiver.entriesCopy()["gw"].summary; !proto.Equal(got, beat) {
		t.Fatal("receiver does not hold the heartbeat")
	}
}

// drainTo empties n's broadcast queues into st, as gossip rounds would, and returns how many delta
// messages there were and the bytes every node sends for them.
func drainTo(t *testing.T, n *Node, st *store) (deltas, bytes int) {
	t.Helper()
	deltas, bytes, _ = drainStale(t, n, st)
	return deltas, bytes
}

// drainStale is drainTo that also counts the deltas that were not sent when they were published
// (their sequence, the publisher's clock, is more than a millisecond old).
func drainStale(t *testing.T, n *Node, st *store) (deltas, bytes, stale int) {
	t.Helper()
	now := uint64(n.now().UnixNano())
	for _, q := range []*memberlist.TransmitLimitedQueue{n.queue, n.beatQueue, n.deltaQueue} {
		sends := n.sendsPerNode(q)
		msgs := q.GetBroadcasts(0, 1<<20)
		for q.NumQueued() > 0 {
			q.GetBroadcasts(0, 1<<20)
		}
		for _, m := range msgs {
			c, err := decodeChunk(m)
			if err != nil {
				t.Fatal(err)
			}
			if c.delta {
				deltas++
				bytes += sends * (len(m) + messageOverhead)
				if c.seq+uint64(time.Millisecond) < now {
					stale++
				}
			}
			if _, _, err := st.addChunk(c, time.Unix(0, 0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return deltas, bytes, stale
}

// A held delta waits for the caller's next publication when the caller publishes steadily faster
// than maxHold, so that a fresh one goes out in its place; otherwise only for the budget.
func TestHoldUntil(t *testing.T) {
	now := time.Unix(1_000, 0)
	tests := []struct {
		name    string
		cadence time.Duration
		nextAt  time.Duration // from now
		want    time.Duration
	}{
		{"steady caller, budget allows sooner", 250 * time.Millisecond, 100 * time.Millisecond, 312500 * time.Microsecond},
		{"steady caller, budget allows later", 250 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond},
		{"back to back: no pace to wait for", 0, 100 * time.Millisecond, 100 * time.Millisecond},
		{"caller slower than maxHold", 600 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &Node{}
			n.pub.cadence, n.pub.pace.nextAt = tt.cadence, now.Add(tt.nextAt)
			if got := n.holdUntil(now).Sub(now); got != tt.want {
				t.Errorf("held until %v from now, want %v", got, tt.want)
			}
		})
	}
}
