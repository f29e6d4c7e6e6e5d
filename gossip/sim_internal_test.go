package gossip

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus/testutil"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Packet framing memberlist adds around the broadcasts of one gossip packet, as modelled here:
// AES-GCM (version byte, 12-byte nonce, 16-byte tag), the compound header (type and count), and
// per message a 2-byte length and the user-message type byte.
const (
	simPacketOverhead = 1 + 12 + 16 + 2
	simMsgOverhead    = 2 + 1
)

// simPool is a virtual-time model of a gossip pool: real Nodes, without memberlist, hand each other
// what their real broadcast queues and push/pull state produce, in gossip rounds as memberlist
// runs them (every GossipInterval, one packet to each of GossipNodes random peers; push/pull with
// one random peer every PushPullInterval scaled as memberlist scales it). Bytes per node and
// summary ages then do not depend on how much CPU a loaded machine grants 100 nodes. Probes and
// acks (a few hundred bytes a second per node) are not modelled.
type simPool struct {
	clock    *fakeClock
	nodes    []*Node
	sent     []int
	parts    map[string]int // bytes sent by every node, by part: full, delta, framing, pushpull
	rng      *rand.Rand
	pushPull []time.Duration    // each node's push/pull phase
	events   map[string]float64 // the gateways' delta counters over the window
}

// newSimPool returns a pool of n nodes, the first `gateways` of them gateways and the rest
// routers, every node knowing every other as an alive member.
func newSimPool(tb testing.TB, n, gateways int, configure func(c *Config)) *simPool {
	tb.Helper()
	p := &simPool{
		clock: &fakeClock{now: time.Unix(1_800_000_000, 0)},
		sent:  make([]int, n),
		parts: map[string]int{},
		rng:   rand.New(rand.NewPCG(7, 9)),
	}
	members := make([]*memberlist.Node, n)
	for i := 0; i < n; i++ {
		c := DefaultLANConfig()
		c.NodeName, c.Role, c.Cluster, c.Region = fmt.Sprintf("node-%02d", i), RoleGateway, fmt.Sprintf("c%02d", i), "r1"
		if i >= gateways {
			c.Role, c.Cluster = RoleRouter, ""
		}
		c.AdvertiseURL, c.Insecure, c.Now = fmt.Sprintf("http://node-%02d.test:8080", i), true, p.clock.Now
		configure(&c)
		node, err := New(c)
		if err != nil {
			tb.Fatal(err)
		}
		p.nodes = append(p.nodes, node)
		members[i] = &memberlist.Node{
			Name: c.NodeName,
			Addr: net.IPv4(10, 0, byte(i/250), byte(i%250)),
			Port: 7946,
			Meta: node.meta,
		}
	}
	for _, node := range p.nodes {
		for _, m := range members {
			node.peers.update(node, m, StateAlive)
		}
		p.pushPull = append(p.pushPull, time.Duration(p.rng.Int64N(int64(p.pushPullInterval()))))
	}
	return p
}

// pushPullInterval is memberlist's push/pull interval scaled for the pool size (×3 at 100 nodes).
func (p *simPool) pushPullInterval() time.Duration {
	mult := 1
	for size := 32; size < len(p.nodes); size *= 2 {
		mult++
	}
	return time.Duration(mult) * p.nodes[0].cfg.Timings.PushPullInterval
}

// peers returns k distinct random peers of node i.
func (p *simPool) peers(i, k int) []int {
	out := make([]int, 0, k)
	for len(out) < k {
		j := p.rng.IntN(len(p.nodes))
		if j != i && !slices.Contains(out, j) {
			out = append(out, j)
		}
	}
	return out
}

// round runs one gossip round (and the push/pulls due in it) and advances the clock.
func (p *simPool) round(elapsed time.Duration) {
	t := p.nodes[0].cfg.Timings
	for i, n := range p.nodes {
		for _, j := range p.peers(i, t.GossipNodes) {
			msgs := (&delegate{n: n}).GetBroadcasts(simMsgOverhead, t.UDPBufferSize-simPacketOverhead)
			if len(msgs) == 0 {
				break
			}
			p.sent[i] += simPacketOverhead
			p.parts["framing"] += simPacketOverhead + len(msgs)*simMsgOverhead
			for _, m := range msgs {
				p.sent[i] += simMsgOverhead + len(m)
				p.parts[simPart(m)] += len(m)
				(&delegate{n: p.nodes[j]}).NotifyMsg(m)
			}
		}
		// Push/pull when this round reaches the node's phase plus a whole number of intervals.
		if since := elapsed - p.pushPull[i]; since >= 0 && since%p.pushPullInterval() < t.GossipInterval {
			p.exchange(i, p.peers(i, 1)[0])
		}
	}
	p.clock.Advance(t.GossipInterval)
}

// exchange runs a push/pull between nodes i and j, counting both states as sent.
func (p *simPool) exchange(i, j int) {
	a, b := &delegate{n: p.nodes[i]}, &delegate{n: p.nodes[j]}
	sa, sb := a.LocalState(false), b.LocalState(false)
	p.sent[i] += len(sa)
	p.sent[j] += len(sb)
	p.parts["pushpull"] += len(sa) + len(sb)
	b.MergeRemoteState(sa, false)
	a.MergeRemoteState(sb, false)
}

// simPart names the part of the traffic a broadcast message belongs to.
func simPart(m []byte) string {
	switch m[0] {
	case msgChunk:
		return "full"
	case msgDelta:
		return "delta"
	}
	return "other"
}

// ages appends the age of every summary every node holds from another node.
func (p *simPool) ages(out []time.Duration) []time.Duration {
	now := p.clock.Now()
	for _, n := range p.nodes {
		for node, e := range n.store.entriesCopy() {
			if node != n.cfg.NodeName {
				out = append(out, now.Sub(time.Unix(0, e.summary.GetGeneratedAtUnixNano())))
			}
		}
	}
	return out
}

// simSummary is the summary of 20 models × 10 adapters a gateway publishes at load (as the pool
// benchmark's): the figures of the first `changing` models move with load.
func simSummary(changing int, load uint32) *gossipv1.CapacitySummary {
	s := &gossipv1.CapacitySummary{}
	for i := 0; i < 20; i++ {
		l := uint32(0)
		if i < changing {
			l = load
		}
		m := &gossipv1.ModelCapacity{
			Name: fmt.Sprintf("org-%d/model-%02d-8b-instruct", i%4, i), ReadyPods: 8 + uint32(i%3), TotalKvTokens: 3_200_000,
			FreeKvTokens: 1_000_000 + uint64(l)*1000 + uint64(i), QueueDepth: l + uint32(i%5), Running: 40 + l,
			Saturation: float32(i%8) / 8, Saturated: i%8 == 7, PredictedTtftMs: 85.5 + float32(l),
			MeanPredictedTtftMs: 120 + 3*float32(l), PrefillTokensPerSecond: 240_000, DecodeTokensPerSecond: 9_000 + float32(l),
		}
		for j := 0; j < 10; j++ {
			m.Adapters = append(m.Adapters, &gossipv1.AdapterCapacity{
				Name: fmt.Sprintf(
					"tenant-%02d-lora-%02d",
					j,
					i,
				),
				ResidentPods: uint32(1 + j%4),
				QueueDepth:   uint32(j % 3),
				Running:      uint32(j),
			})
		}
		s.Models = append(s.Models, m)
	}
	return s
}

// BenchmarkBandwidthSimulated runs the pool benchmark's workload (100 nodes, LAN timings, gateways
// publishing 20 models × 10 adapters every 250 ms) in virtual time, side by side: "fulls" sends a
// full summary every time with exact figures (the behaviour before deltas), "deltas" sends deltas
// without the broadcast budget (BroadcastBudget 0, the behaviour before it), "budget" the
// defaults. It reports broadcast and push/pull bytes sent per node per second (probes excluded),
// split into full-summary chunks, delta chunks, packet framing and push/pull states, the deltas
// each gateway sent and held back per second, and the age of held summaries, sampled every
// round, over one FullSummaryInterval (30 s) after 8 s of warm-up (the first full summaries of
// every gateway take seconds to drain from the queues). The gateways' periodic full summaries
// are spread over the window, as gateways started at different times would send them, so each
// sends one in it.
func BenchmarkBandwidthSimulated(b *testing.B) {
	modes := []struct {
		name      string
		configure func(c *Config)
	}{
		{"fulls", func(c *Config) {
			c.FullSummaryInterval, c.Precision, c.BroadcastBudget = time.Nanosecond, Precision{}, 0
		}},
		{"deltas", func(c *Config) { c.FullSummaryInterval, c.BroadcastBudget = 30*time.Second, 0 }},
		{"budget", func(*Config) {}},
	}
	for _, gateways := range []int{10, 20} {
		for _, changing := range []int{20, 2} {
			for _, mode := range modes {
				name := fmt.Sprintf("nodes=100/gateways=%d/changing=%d/%s", gateways, changing, mode.name)
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						simulate(b, gateways, changing, mode.configure)
					}
				})
			}
		}
	}
}

func simulate(b *testing.B, gateways, changing int, configure func(c *Config)) {
	const n, warmup = 100, 8 * time.Second
	p := newSimPool(b, n, gateways, configure)
	interval, fullEvery := p.nodes[0].cfg.Timings.GossipInterval, p.nodes[0].cfg.FullSummaryInterval
	window := max(fullEvery, 8*time.Second)
	var ages []time.Duration
	var before int
	next, round := time.Duration(0), uint32(0)
	for elapsed := time.Duration(0); elapsed < warmup+window; elapsed += interval {
		for ; next <= elapsed; next += 250 * time.Millisecond {
			for g := 0; g < gateways; g++ {
				if _, err := p.nodes[g].Publish(simSummary(changing, round*7+uint32(g))); err != nil {
					b.Fatal(err)
				}
				if round == 0 { // spread the periodic full summaries over the window
					p.nodes[g].pub.baseAt = p.clock.Now().
						Add(warmup + fullEvery*time.Duration(2*g+1)/time.Duration(2*gateways) - fullEvery)
				}
			}
			round++
		}
		if elapsed == warmup {
			for _, s := range p.sent {
				before += s
			}
			clear(p.parts)
			p.counts(-1, gateways)
		}
		p.round(elapsed)
		if elapsed >= warmup {
			ages = p.ages(ages)
		}
	}
	total := -before
	for _, s := range p.sent {
		total += s
	}
	slices.Sort(ages)
	b.ReportMetric(float64(total)/n/window.Seconds(), "sent-B/s/node")
	for part, bytes := range p.parts {
		b.ReportMetric(float64(bytes)/n/window.Seconds(), part+"-B/s/node")
	}
	for event, count := range p.counts(1, gateways) {
		b.ReportMetric(count/float64(gateways)/window.Seconds(), event+"/s/gateway")
	}
	var sum time.Duration
	for _, a := range ages {
		sum += a
	}
	b.ReportMetric(float64(sum.Milliseconds())/float64(len(ages)), "mean-age-ms")
	b.ReportMetric(float64(ages[len(ages)/2].Milliseconds()), "p50-age-ms")
	b.ReportMetric(float64(ages[len(ages)*9/10].Milliseconds()), "p90-age-ms")
	b.ReportMetric(float64(ages[len(ages)*99/100].Milliseconds()), "p99-age-ms")
}

// counts adds sign times the gateways' delta counters (sent and held back) to p.events and
// returns them.
func (p *simPool) counts(sign float64, gateways int) map[string]float64 {
	if p.events == nil {
		p.events = map[string]float64{}
	}
	for _, n := range p.nodes[:gateways] {
		p.events["deltas"] += sign * testutil.ToFloat64(n.metrics.deltas.WithLabelValues("published"))
		p.events["held"] += sign * testutil.ToFloat64(n.metrics.deltas.WithLabelValues("held"))
	}
	return p.events
}
