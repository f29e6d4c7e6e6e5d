package gossip_test

import (
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// budgetFlag sets BroadcastBudget in BenchmarkBandwidth's pool; -1 keeps the default.
var budgetFlag = flag.Int(
	"gossip.budget",
	-1,
	"BenchmarkBandwidth: Config.BroadcastBudget of every node (-1: the default, 0: off)",
)

// benchPool starts n nodes with the given timings, the first `gateways` of them gateways and the
// rest routers, and waits until every node sees every other. A budget of -1 keeps the default.
func benchPool(b *testing.B, n, gateways int, timings gossip.Timings, budget int) *gossiptest.Pool {
	b.Helper()
	p := gossiptest.Start(b, n, func(i int, c *gossip.Config) {
		c.Timings = timings
		c.SummaryTTL = 3 * time.Second
		if i >= gateways {
			c.Role, c.Cluster = gossip.RoleRouter, ""
		}
		if budget >= 0 {
			c.BroadcastBudget = budget
		}
	})
	poll.Until(
		b,
		5*time.Minute,
		func() bool { return gossiptest.AllMembersAlive(nodes(p), n) },
		"the pool to form",
	) // a loaded machine is slow to form it
	return p
}

// BenchmarkPropagation measures how long one published change takes to reach the nodes of a
// 100-node pool: p50 and p99 over every (node, change) arrival, and the mean time until the last
// node has it. Run with -benchtime=Nx (N changes).
func BenchmarkPropagation(b *testing.B) {
	profiles := []struct {
		name    string
		timings gossip.Timings
	}{
		{"LAN", gossip.LANTimings()},
		{"WAN", gossip.WANTimings()},
	}
	for _, prof := range profiles {
		b.Run(prof.name+"/nodes=100", func(b *testing.B) {
			const n = 100
			p := benchPool(b, n, n, prof.timings, -1)
			var arrivals, lasts []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				pub := p.Node(i % n)
				sent, err := pub.Publish(testSummary(20, 10, 0, uint32(i)))
				if err != nil {
					b.Fatal(err)
				}
				at := time.Unix(0, sent.GetGeneratedAtUnixNano())
				poll.Until(
					b,
					time.Minute,
					func() bool { return hasSeq(p, sent.GetNode(), sent.GetSequence()) },
					"the change to reach every node",
				)
				var last time.Duration
				for k := 0; k < n; k++ {
					if s := summaryOf(p.Node(k), sent.GetNode()); s != nil && k != i%n {
						d := s.ReceivedAt.Sub(at)
						arrivals = append(arrivals, d)
						last = max(last, d)
					}
				}
				lasts = append(lasts, last)
			}
			b.StopTimer()
			slices.Sort(arrivals)
			b.ReportMetric(pct(arrivals, 0.50).Seconds()*1000, "p50-ms")
			b.ReportMetric(pct(arrivals, 0.99).Seconds()*1000, "p99-ms")
			b.ReportMetric(mean(lasts).Seconds()*1000, "all-nodes-ms")
		})
	}
}

// BenchmarkBandwidth measures bytes per node per second in a 100-node LAN pool while gateways
// publish 20 models × 10 adapters every 250 ms. With changing=20, every figure of every model
// changes in every publication (the worst case: a cluster whose queues all move all the time);
// with changing=2, two busy models' figures change in every publication and the other 18 stay
// steady. Each iteration is one second of traffic, measured after a warm-up; run with
// -benchtime=Nx, and -gossip.budget=0 to turn the broadcast budget off. BenchmarkBandwidthSimulated
// runs the same workload in virtual time.
func BenchmarkBandwidth(b *testing.B) {
	const warmup = 5 * time.Second
	cases := []struct{ gateways, changing int }{{10, 20}, {20, 20}, {10, 2}, {20, 2}}
	for _, bc := range cases {
		gateways := bc.gateways
		b.Run(fmt.Sprintf("nodes=100/gateways=%d/changing=%d", gateways, bc.changing), func(b *testing.B) {
			const n = 100
			// Dissemination at LAN timings; failure detection relaxed so that a starved CPU does
			// not get live nodes declared dead mid-measurement (probes are a few bytes a second).
			timings := gossip.LANTimings()
			relaxed := gossiptest.RelaxedTimings()
			timings.ProbeInterval, timings.ProbeTimeout, timings.SuspicionMult = relaxed.ProbeInterval, relaxed.ProbeTimeout, relaxed.SuspicionMult
			p := benchPool(b, n, gateways, timings, *budgetFlag)
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				t := time.NewTicker(250 * time.Millisecond)
				defer t.Stop()
				for round := uint32(0); ; round++ {
					for g := 0; g < gateways; g++ {
						_, _ = p.Node(g).Publish(changingSummary(bc.changing, round*7+uint32(g)))
					}
					select {
					case <-stop:
						return
					case <-t.C:
					}
				}
			}()
			// Warm up: every gateway's first summary is a full one, which takes seconds to drain
			// from the queues; measure the steady state after it.
			time.Sleep(warmup)
			before := totals(p)
			start := time.Now()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				time.Sleep(time.Second)
			}
			b.StopTimer()
			elapsed := time.Since(start).Seconds()
			after := totals(p)
			ages := summaryAges(p) // sampled while the gateways still publish
			close(stop)
			<-done
			per := func(x uint64) float64 { return float64(x) / n / elapsed }
			b.ReportMetric(
				per(after.PacketBytesSent+after.StreamBytesSent-before.PacketBytesSent-before.StreamBytesSent),
				"sent-B/s/node",
			)
			b.ReportMetric(per(after.OwnBroadcastBytes-before.OwnBroadcastBytes)*n/float64(gateways), "own-B/s/gateway")
			b.ReportMetric(per(after.RelayedBroadcastBytes-before.RelayedBroadcastBytes), "relayed-B/s/node")
			b.ReportMetric(pct(ages, 0.5).Seconds()*1000, "p50-age-ms")
			b.ReportMetric(pct(ages, 0.99).Seconds()*1000, "p99-age-ms")
		})
	}
}

// changingSummary returns the summary of 20 models × 10 adapters a gateway publishes at load:
// the figures of the first `changing` models move with load, the others stay as at load 0.
func changingSummary(changing int, load uint32) *gossipv1.CapacitySummary {
	s := testSummary(20, 10, 0, 0)
	moving := testSummary(20, 10, 0, load)
	copy(s.Models[:min(changing, 20)], moving.Models)
	return s
}

func totals(p *gossiptest.Pool) gossip.Stats {
	var t gossip.Stats
	for i := 0; i < p.Len(); i++ {
		s := p.Node(i).Stats()
		t.PacketBytesSent += s.PacketBytesSent
		t.StreamBytesSent += s.StreamBytesSent
		t.OwnBroadcastBytes += s.OwnBroadcastBytes
		t.RelayedBroadcastBytes += s.RelayedBroadcastBytes
	}
	return t
}

// summaryAges returns the sorted ages of every summary every node holds from another node.
func summaryAges(p *gossiptest.Pool) []time.Duration {
	var ages []time.Duration
	for i := 0; i < p.Len(); i++ {
		for _, s := range p.Node(i).Snapshot() {
			if s.Node != p.Node(i).Name() {
				ages = append(ages, s.Age)
			}
		}
	}
	slices.Sort(ages)
	return ages
}

func pct(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}
