package publish_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/publish"
	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// A gateway node publishes through a Publisher; a router node on the same loopback pool sees the
// summary, and then a change of the gateway's view, in its Snapshot.
func TestRouterSeesPublishedSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a gossip pool")
	}
	pool := gossiptest.Start(t, 2, func(i int, c *gossip.Config) {
		c.Timings = gossiptest.RelaxedTimings()
		c.SummaryTTL = 10 * time.Second // a busy machine must not make the summary stale
		if i == 1 {
			c.NodeName, c.Role, c.Cluster, c.AdvertiseURL = "router-1", gossip.RoleRouter, "", ""
		}
	})
	gw, router := pool.Node(0), pool.Node(1)
	poll.Until(t, 20*time.Second, func() bool {
		return gossiptest.AllMembersAlive([]*gossip.Node{gw, router}, 2)
	}, "the pool to form")

	view := newView(t, time.Now(), podSpec{base: "m", m: kv(1, 0, 0.5)}, podSpec{base: "m", m: kv(0, 0, 0.5)})
	p, err := publish.New(testConfig(), view.View(), gw, publish.Options{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	seen := func(queue uint32) func() bool {
		return func() bool {
			mc := routerView(router, gw.Name())
			return mc != nil && mc.GetReadyPods() == 2 && mc.GetTotalKvTokens() == 3200 && mc.GetQueueDepth() == queue
		}
	}
	poll.Until(t, 20*time.Second, seen(1), "the router to see the gateway's summary")
	setPod(view.Get(addr(1)), podSpec{base: "m", m: kv(9, 0, 0.5)}, time.Now())
	poll.Until(t, 20*time.Second, seen(10), "the router to see the queue grow")
}

// routerView returns the capacity of model "m" in node's newest summary as router sees it.
func routerView(router *gossip.Node, node string) *gossipv1.ModelCapacity {
	for _, s := range router.Snapshot() {
		if s.Node != node || s.Stale || s.Cluster != "c00" {
			continue
		}
		for _, mc := range s.Summary.GetModels() {
			if mc.GetName() == "m" {
				return mc
			}
		}
	}
	return nil
}
