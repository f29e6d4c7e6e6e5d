package frontdoor_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// gateway is a fake cluster gateway that counts the requests it answers.
type gateway struct {
	url  string
	hits atomic.Int64
}

func startGateway(t *testing.T, cluster, region string) *gateway {
	g := &gateway{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		g.hits.Add(1)
		w.Header().Set("X-Switchyard-Cluster", cluster)
		w.Header().Set("X-Switchyard-Region", region)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"hi\"}]}\n\ndata: [DONE]\n\n")
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	g.url = srv.URL
	return g
}

// publishEvery publishes a summary of a cluster at kvUsed, predicting ttftMs, on node every
// interval until ctx ends: a gateway's heartbeat.
func publishEvery(ctx context.Context, t *testing.T, node *gossip.Node, url string, kvUsed float64, ttftMs float32,
	interval time.Duration) <-chan struct{} {
	done := make(chan struct{})
	total := uint64(1_000_000)
	s := &gossipv1.CapacitySummary{GatewayUrl: url, Models: []*gossipv1.ModelCapacity{{
		Name: "llama", ReadyPods: 4, TotalKvTokens: total, FreeKvTokens: uint64((1 - kvUsed) * float64(total)),
		PredictedTtftMs: ttftMs, PrefillTokensPerSecond: 80_000,
	}}}
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			if _, err := node.Publish(s); err != nil {
				t.Errorf("publish: %v", err)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return done
}

// TestStaleSummariesAvoided runs a real gossip pool: a router node and two gateways of the
// router's region. The preferred cluster (less loaded, and predicting a sooner first token: with
// no queue anywhere the load alone does not separate the two estimates) gets the traffic while it publishes; once
// its gateway stops publishing (its summary outlives the TTL) it gets no new request while the
// other cluster's summary is fresh.
func TestStaleSummariesAvoided(t *testing.T) {
	const region = "us-east-1"
	pool := gossiptest.Start(t, 3, func(i int, c *gossip.Config) {
		c.Timings = gossiptest.RelaxedTimings() // the race detector on a loaded machine
		c.Region = region
		switch i {
		case 0:
			c.Role, c.Cluster, c.AdvertiseURL = gossip.RoleRouter, "", ""
		case 1:
			c.Cluster = "preferred"
		case 2:
			c.Cluster = "fallback"
		}
	})
	preferred, fallback := startGateway(t, "preferred", region), startGateway(t, "fallback", region)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopPreferred, cancelPreferred := context.WithCancel(ctx)
	preferredDone := publishEvery(stopPreferred, t, pool.Node(1), preferred.url, 0.1, 30, 200*time.Millisecond)
	fallbackDone := publishEvery(ctx, t, pool.Node(2), fallback.url, 0.5, 60, 200*time.Millisecond)
	defer func() { cancel(); <-preferredDone; <-fallbackDone }()

	table := clustertable.New(clustertable.Config{Region: region}, pool.Node(0), nil)
	fwd, err := forward.New(forward.DefaultConfig(), table)
	if err != nil {
		t.Fatal(err)
	}
	cfg := frontdoor.DefaultConfig()
	cfg.Region, cfg.QueueWait = region, 2*time.Second // rides out a late heartbeat on a loaded machine
	cfg.Options.NearBest = 0                          // always the best estimate: the preferred cluster while it is fresh
	srv := httptest.NewServer(frontdoor.New(cfg, table, policies{}, fwd, nil, nil).Handler())
	t.Cleanup(srv.Close)

	fresh := func(cluster string) func() bool {
		return func() bool {
			for _, e := range table.View("llama", nil) {
				if e.Cluster.Name == cluster {
					return !e.Cluster.Stale
				}
			}
			return false
		}
	}
	poll.Until(t, 20*time.Second, func() bool { return fresh("preferred")() && fresh("fallback")() },
		"the router to see both clusters fresh")
	sendAll(t, srv.URL, 5)
	if preferred.hits.Load() == 0 {
		t.Fatalf("the preferred cluster got no request while fresh (fallback got %d)", fallback.hits.Load())
	}

	cancelPreferred() // its gateway stops publishing; the node stays in the pool
	<-preferredDone
	poll.Until(t, 20*time.Second, func() bool { return !fresh("preferred")() },
		"the silent cluster's summary to go stale")
	before, fallbackBefore := preferred.hits.Load(), fallback.hits.Load()
	const n = 20
	sendAll(t, srv.URL, n)
	if got := preferred.hits.Load() - before; got != 0 {
		t.Errorf("the cluster with a stale summary got %d of %d new requests", got, n)
	}
	if got := fallback.hits.Load() - fallbackBefore; got != n {
		t.Errorf("the fresh cluster got %d of %d new requests", got, n)
	}
}

func sendAll(t *testing.T, url string, n int) {
	t.Helper()
	for range n {
		if resp, body := post(t, url, okBody); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d (body %s)", resp.StatusCode, body)
		}
	}
}
