package gossip_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
)

func TestMetricsAndRTT(t *testing.T) {
	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
	p := gossiptest.Start(t, 2, func(i int, c *gossip.Config) { c.Registerer = regs[i]; c.SummaryTTL = time.Minute })
	formed(t, p)
	sent, err := p.Node(0).Publish(testSummary(3, 2, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(
		t,
		10*time.Second,
		func() bool { return hasSeq(p, sent.GetNode(), sent.GetSequence()) },
		"the summary to arrive",
	)
	want := `
# HELP switchyard_gossip_published_total Summaries published by this node.
# TYPE switchyard_gossip_published_total counter
switchyard_gossip_published_total 1
`
	if err := testutil.GatherAndCompare(
		regs[0],
		strings.NewReader(want),
		"switchyard_gossip_published_total",
	); err != nil {
		t.Error(err)
	}
	poll.Until(t, 10*time.Second, func() bool {
		mfs, err := regs[1].Gather()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, mf := range mfs {
			seen[mf.GetName()] = true
		}
		return seen["switchyard_gossip_summaries_applied_total"] && seen["switchyard_gossip_transport_bytes_total"] &&
			seen["switchyard_gossip_members"] && seen["switchyard_gossip_summary_age_seconds"] &&
			seen["switchyard_gossip_broadcast_queue_depth"]
	}, "metrics missing on the receiving node")
	if st := p.Node(1).Stats(); st.PacketBytesReceived == 0 || st.SummariesApplied != 1 {
		t.Errorf("receiver stats %+v", st)
	}
	if st := p.Node(0).Stats(); st.OwnBroadcastBytes == 0 {
		t.Errorf("publisher stats %+v", st)
	}
	poll.Until(t, 15*time.Second, func() bool {
		s := summaryOf(p.Node(1), sent.GetNode())
		return s.RTTKnown && s.RTT > 0 && s.RTT < time.Second
	}, "no RTT estimate to the publisher")
}

func TestClustersPicksFreshestReplica(t *testing.T) {
	mk := func(node, cluster string, gen int64, stale bool) gossip.Summary {
		s := stamped(testSummary(1, 0, 0, 1))
		s.Node, s.Cluster, s.GeneratedAtUnixNano = node, cluster, gen
		return gossip.Summary{Summary: s, Node: node, Cluster: cluster, Stale: stale}
	}
	snap := []gossip.Summary{
		mk("a-0", "a", 10, false), mk("a-1", "a", 20, false), mk("a-2", "a", 30, true),
		mk("b-0", "b", 5, true), mk("b-1", "b", 7, true),
	}
	got := gossip.Clusters(snap)
	if got["a"].Node != "a-1" || got["b"].Node != "b-1" || len(got) != 2 {
		t.Errorf("Clusters = a:%s b:%s (%d)", got["a"].Node, got["b"].Node, len(got))
	}
}
