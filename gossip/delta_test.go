package gossip_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// holdsExactly reports whether every node of p except the publisher holds sent, field for field.
func holdsExactly(p *gossiptest.Pool, sent *gossipv1.CapacitySummary) bool {
	for i := 0; i < p.Len(); i++ {
		if p.Node(i).Name() == sent.GetNode() {
			continue
		}
		s := summaryOf(p.Node(i), sent.GetNode())
		if s == nil || !proto.Equal(s.Summary, sent) {
			return false
		}
	}
	return true
}

// A gateway that keeps publishing sends deltas after its first full summary; every node rebuilds
// exactly the summary the gateway published, and so does a node that joins later (push/pull hands
// it the base with the summary), for the deltas that follow.
func TestDeltasRebuildPublishedSummaries(t *testing.T) {
	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry(), prometheus.NewRegistry()}
	p := gossiptest.Start(t, 3, func(i int, c *gossip.Config) {
		c.Registerer, c.SummaryTTL = regs[i], time.Minute
		c.Timings = gossiptest.RelaxedTimings()
	})
	formed(t, p)
	pub := p.Node(0)
	publish := func(load uint32) *gossipv1.CapacitySummary {
		t.Helper()
		s := testSummary(20, 10, 0, 1)
		s.Models[load%20].QueueDepth = 100 + load // one model changes
		s.Models[3].Adapters[load%10].Running = load
		sent, err := pub.Publish(s)
		if err != nil {
			t.Fatal(err)
		}
		return sent
	}
	for load := uint32(0); load < 5; load++ {
		sent := publish(load)
		poll.Until(t, 30*time.Second, func() bool { return holdsExactly(p, sent) },
			fmt.Sprintf("summary %d rebuilt exactly everywhere", load))
	}
	want := `
# HELP switchyard_gossip_deltas_total Summary deltas by event: published here, applied, parked for want of their base, full summary requested of their publisher, held back here by the broadcast budget, superseded while held.
# TYPE switchyard_gossip_deltas_total counter
switchyard_gossip_deltas_total{event="published"} 4
`
	if err := testutil.GatherAndCompare(regs[0], strings.NewReader(want), "switchyard_gossip_deltas_total"); err != nil {
		t.Error(err)
	}

	reg := prometheus.NewRegistry()
	c := gossiptest.Config(3)
	c.Registerer, c.SummaryTTL, c.Timings, c.Seeds = reg, time.Minute, gossiptest.RelaxedTimings(), []string{p.Seed()}
	p.Add(c)
	formed(t, p)
	last := summaryOf(p.Node(1), pub.Name()).Summary
	poll.Until(t, 30*time.Second, func() bool { return holdsExactly(p, last) }, "the late node to get the summary")
	// Publish until the late node applies a delta (a periodic push/pull may bring it a summary
	// before the delta does): it must never have parked one, since push/pull gave it the base.
	for load := uint32(7); deltaEvents(t, reg, "applied") == 0; load++ {
		if load > 12 {
			t.Fatalf("late node applied no delta (parked %v)", deltaEvents(t, reg, "parked"))
		}
		sent := publish(load)
		poll.Until(
			t,
			30*time.Second,
			func() bool { return holdsExactly(p, sent) },
			fmt.Sprintf("summary %d rebuilt exactly everywhere", load),
		)
	}
	if got := deltaEvents(t, reg, "parked"); got != 0 {
		t.Errorf("late node parked %v deltas, want 0 (its base came by push/pull)", got)
	}
}

// deltaEvents returns the value of switchyard_gossip_deltas_total{event} in reg (0 when absent).
func deltaEvents(t *testing.T, reg *prometheus.Registry, event string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "switchyard_gossip_deltas_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "event" && l.GetValue() == event {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
