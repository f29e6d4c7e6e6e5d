package admin_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/contract/poll"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
)

func listClusters(t *testing.T, e *admintest.Env, model string) []*adminv1.Cluster {
	t.Helper()
	resp, err := e.Client.ListClusters(testCtx(t), connect.NewRequest(&adminv1.ListClustersRequest{Model: model}))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Msg.GetClusters()
}

func findCluster(cs []*adminv1.Cluster, name string) *adminv1.Cluster {
	for _, c := range cs {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}

func TestListClusters(t *testing.T) {
	e := newEnv(t)
	e.Publish(t, 1, admintest.Capacity("llama", 4, 300_000, "sql-lora"), admintest.Capacity("mistral", 2, 100_000))
	cs := listClusters(t, e, "")
	if len(cs) != 2 || cs[0].GetName() != "c2" || cs[1].GetName() != "c1" {
		t.Fatalf("clusters = %v, want [c2 (eu-west-1) c1 (us-east-1)] ordered by region", cs)
	}
	c1 := cs[1]
	if c1.GetRegion() != "us-east-1" || !c1.GetHealthy() || c1.GetStale() || c1.GetDrained() || c1.GetRegionDrained() {
		t.Errorf("c1 state = %v, want healthy, fresh, undrained in us-east-1", c1)
	}
	if !slices.Equal(c1.GetGatewayUrls(), []string{"http://c1.test:8080"}) {
		t.Errorf("c1 gateway URLs = %v", c1.GetGatewayUrls())
	}
	if c1.GetFreeKvTokens() != 400_000 || c1.GetTotalKvTokens() != 800_000 || c1.GetQueueDepth() != 6 ||
		c1.GetRunning() != 10 {
		t.Errorf(
			"c1 totals = free %d total %d queue %d running %d",
			c1.GetFreeKvTokens(),
			c1.GetTotalKvTokens(),
			c1.GetQueueDepth(),
			c1.GetRunning(),
		)
	}
	if c1.GetSignalAgeMs() > 60_000 {
		t.Errorf("c1 signal age %d ms for a summary just published", c1.GetSignalAgeMs())
	}
	m := c1.GetModels()
	if len(m) != 2 || m[0].GetName() != "llama" || m[0].GetReadyPods() != 4 || m[0].GetPredictedTtftMs() != 120 ||
		m[0].GetMeanPredictedTtftMs() != 160 ||
		m[0].GetSaturation() != 0.25 ||
		!slices.Equal(m[0].GetAdapters(), []string{"sql-lora"}) {
		t.Errorf("c1 models = %v", m)
	}

	if got := e.Admin.ClusterTable(); !sameClusters(got, cs) {
		t.Errorf("ClusterTable() = %v, want what ListClusters answers: %v", got, cs)
	}

	e.Table.Sent("c1")
	e.Table.Sent("c1")
	for _, filter := range []string{"", "llama", "mistral"} {
		if got := findCluster(listClusters(t, e, filter), "c1").GetInFlight(); got != 2 {
			t.Errorf("c1 in flight with filter %q = %d, want the 2 sent since its summary", filter, got)
		}
	}

	tests := []struct {
		filter string
		want   []string
	}{
		{"", []string{"c2", "c1"}},
		{"llama", []string{"c2", "c1"}},
		{"mistral", []string{"c1"}},
		{"sql-lora", []string{"c1"}},
		{"unknown", nil},
	}
	for _, tt := range tests {
		t.Run("filter="+tt.filter, func(t *testing.T) {
			var got []string
			for _, c := range listClusters(t, e, tt.filter) {
				got = append(got, c.GetName())
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("clusters serving %q = %v, want %v", tt.filter, got, tt.want)
			}
		})
	}
	_, err := e.Client.ListClusters(testCtx(t), connect.NewRequest(&adminv1.ListClustersRequest{Model: "bad model"}))
	wantCode(t, err, connect.CodeInvalidArgument)
}

// TestClusterHealth: a cluster whose requests fail turns unhealthy; one whose gateway stopped
// publishing and left turns stale and unhealthy.
func TestClusterHealth(t *testing.T) {
	e := newEnv(t)
	e.Table.Observe(
		forward.Outcome{Target: forward.Target{Cluster: "c1", Region: "us-east-1"}, Err: errors.New("connection refused")},
	)
	c1 := findCluster(listClusters(t, e, ""), "c1")
	if c1.GetHealthy() || c1.GetStale() {
		t.Fatalf("c1 after a failed request = %v, want unhealthy but fresh", c1)
	}
	e.Pool.Stop(2) // c2's only gateway leaves the pool
	poll.Until(t, admintest.WaitTimeout, func() bool {
		c2 := findCluster(listClusters(t, e, ""), "c2")
		return c2.GetStale() && !c2.GetHealthy()
	}, "c2 stale")
}

func TestWatchClusters(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	stream, err := e.Client.WatchClusters(
		ctx,
		connect.NewRequest(&adminv1.WatchClustersRequest{Model: "llama", IntervalMs: 10}),
	)
	if err != nil {
		t.Fatal(err)
	}
	next := func(what string, cond func([]*adminv1.Cluster) bool) {
		t.Helper()
		for stream.Receive() {
			if cond(stream.Msg().GetClusters()) {
				return
			}
		}
		t.Fatalf("stream ended before %s: %v", what, stream.Err())
	}
	next("the initial table", func(cs []*adminv1.Cluster) bool { return len(cs) == 2 })
	if err := e.Store.SetClusterDrain(ctx, "c1", true); err != nil {
		t.Fatal(err)
	}
	next("the drain", func(cs []*adminv1.Cluster) bool { return findCluster(cs, "c1").GetDrained() })
	e.Publish(t, 2, admintest.Capacity("llama", 8, 50_000))
	next("the new summary", func(cs []*adminv1.Cluster) bool { return findCluster(cs, "c2").GetFreeKvTokens() == 50_000 })
	if n := testutilGauge(t, e, "switchyard_router_admin_watches"); n != 1 {
		t.Errorf("open watches = %v, want 1", n)
	}
	if err := stream.Close(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, admintest.WaitTimeout, func() bool {
		return testutilGauge(t, e, "switchyard_router_admin_watches") == 0
	}, "the watch to end on the server")
}

func TestListMembers(t *testing.T) {
	e := newEnv(t)
	var ms []*adminv1.Member
	poll.Until(t, admintest.WaitTimeout, func() bool {
		resp, err := e.Client.ListMembers(testCtx(t), connect.NewRequest(&adminv1.ListMembersRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		ms = resp.Msg.GetMembers()
		alive := 0
		for _, m := range ms {
			if m.GetState() == adminv1.MemberState_MEMBER_STATE_ALIVE {
				alive++
			}
		}
		return alive == 3
	}, "three live members")
	var names []string
	for _, m := range ms {
		names = append(names, m.GetName())
	}
	if !slices.Equal(names, []string{"gw-c1", "gw-c2", "router-0"}) {
		t.Fatalf("members = %v, want sorted [gw-c1 gw-c2 router-0]", names)
	}
	gw, router := ms[1], ms[2]
	if gw.GetRole() != "gateway" || gw.GetCluster() != "c2" || gw.GetRegion() != "eu-west-1" ||
		gw.GetUrl() != "http://c2.test:8080" || !strings.HasPrefix(gw.GetAddress(), "127.0.0.1:") || gw.GetVersion() == "" {
		t.Errorf("gateway member = %v", gw)
	}
	if router.GetRole() != "router" || router.GetCluster() != "" || router.GetRegion() != "us-east-1" {
		t.Errorf("router member = %v", router)
	}
}

// sameClusters reports whether two cluster lists are equal but for the signals' ages.
func sameClusters(a, b []*adminv1.Cluster) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := proto.CloneOf(a[i]), proto.CloneOf(b[i])
		x.SignalAgeMs, y.SignalAgeMs = 0, 0
		if !proto.Equal(x, y) {
			return false
		}
	}
	return true
}
