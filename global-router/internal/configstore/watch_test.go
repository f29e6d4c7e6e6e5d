package configstore_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd/etcdtest"
	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

func TestViewBeforeAndAfterLoad(t *testing.T) {
	s := newStore(t, nsClient(t, shared))
	v := s.Snapshot()
	if v == nil || v.Loaded() || v.Revision() != 0 {
		t.Fatalf("view before Run: %+v, want an empty unloaded view", v)
	}
	runStore(t, s)
	v = s.Snapshot()
	if got := v.Policy("any-model"); got.OverflowThreshold != 0.8 || got.AllowedRegions != nil || got.OverflowCap != 0 {
		t.Fatalf("policy with nothing stored = %+v, want %+v", got, routing.DefaultPolicy())
	}
	if v.Drained("c1", "us-east-1") || len(v.Models()) != 0 {
		t.Fatalf("empty config has drains or policies: %v %v", v.DrainedClusters(), v.Models())
	}
	if _, ok := v.StoredPolicy("any-model"); ok {
		t.Fatal("StoredPolicy found a policy in an empty config")
	}
}

// TestWatchAppliesChanges: changes written through one store reach another store's view.
func TestWatchAppliesChanges(t *testing.T) {
	ctx := testCtx(t)
	ns := newNamespace()
	writer := newStore(t, nsClientIn(t, shared, ns))
	// The existing policy is loaded; everything later arrives through the watch.
	if _, err := writer.PutPolicy(ctx, &adminv1.Policy{Model: "old", OverflowCap: 1}, 0); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reader, err := configstore.New(nsClientIn(t, shared, ns), etcdtest.Discard, reg)
	if err != nil {
		t.Fatal(err)
	}
	runStore(t, reader)
	if reader.Snapshot().Policy("old").OverflowCap != 1 {
		t.Fatal("initial load missed the stored policy")
	}

	before := reader.Snapshot()
	p, err := writer.PutPolicy(ctx, &adminv1.Policy{Model: "m", OverflowThreshold: proto.Float64(0.5), AllowedRegions: []string{"eu-west-1"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "policy in the reader's view", func() bool { return reader.Snapshot().Policy("m").OverflowThreshold == 0.5 })
	select {
	case <-before.Replaced():
	default:
		t.Fatal("the old view was not marked replaced")
	}
	v := reader.Snapshot()
	if got := v.Policy("m"); !slices.Equal(got.AllowedRegions, []string{"eu-west-1"}) || v.Revision() < p.GetRevision() {
		t.Fatalf("view policy %+v at revision %d, want eu-west-1 only at >= %d", got, v.Revision(), p.GetRevision())
	}
	if before.Policy("m").OverflowThreshold != 0.8 {
		t.Fatal("an old view changed: views must be immutable")
	}

	steps := []struct {
		name string
		do   func() error
		cond func(*configstore.View) bool
	}{
		{"drain cluster", func() error { return writer.SetClusterDrain(ctx, "c1", true) },
			func(v *configstore.View) bool { return v.ClusterDrained("c1") && v.Drained("c1", "x") }},
		{"drain region", func() error { return writer.SetRegionDrain(ctx, "us-east-1", true) },
			func(v *configstore.View) bool {
				return v.Drained("c2", "us-east-1") && slices.Equal(v.DrainedRegions(), []string{"us-east-1"})
			}},
		{"undrain cluster", func() error { return writer.SetClusterDrain(ctx, "c1", false) },
			func(v *configstore.View) bool { return !v.ClusterDrained("c1") && v.RegionDrained("us-east-1") }},
		{"undrain region twice", func() error {
			if err := writer.SetRegionDrain(ctx, "us-east-1", false); err != nil {
				return err
			}
			return writer.SetRegionDrain(ctx, "us-east-1", false)
		}, func(v *configstore.View) bool { return !v.Drained("c1", "us-east-1") }},
		{"delete policy", func() error { return writer.DeletePolicy(ctx, "m", 0) },
			func(v *configstore.View) bool {
				_, ok := v.StoredPolicy("m")
				return !ok && v.Policy("m").OverflowThreshold == 0.8
			}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		waitFor(t, st.name, func() bool { return st.cond(reader.Snapshot()) })
	}
	if n := metricValue(t, reg, "switchyard_router_config_events_total"); n < 5 {
		t.Fatalf("events applied = %v, want >= 5", n)
	}
}

// TestInvalidStoredValueKeepsPrevious: a value written around the API does not replace a good policy.
func TestInvalidStoredValueKeepsPrevious(t *testing.T) {
	ctx := testCtx(t)
	cli := nsClient(t, shared)
	reg := prometheus.NewRegistry()
	s, err := configstore.New(cli, etcdtest.Discard, reg)
	if err != nil {
		t.Fatal(err)
	}
	runStore(t, s)
	if _, err := s.PutPolicy(ctx, &adminv1.Policy{Model: "m", OverflowCap: 3}, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "good policy", func() bool { return s.Snapshot().Policy("m").OverflowCap == 3 })
	if _, err := cli.Put(ctx, configstore.PolicyKey("m"), `{"model":"m","overflow_cap":-5}`); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, configstore.ClusterDrainKey("marker"), "x"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "marker", func() bool { return s.Snapshot().ClusterDrained("marker") })
	if got := s.Snapshot().Policy("m").OverflowCap; got != 3 {
		t.Fatalf("after an invalid value the cap is %d, want the previous 3", got)
	}
	if n := metricValue(t, reg, "switchyard_router_config_invalid_values_total"); n != 1 {
		t.Fatalf("invalid values counted %v, want 1", n)
	}
	if _, err := s.ListPolicies(ctx); err == nil || !strings.Contains(err.Error(), `"m"`) {
		t.Fatalf("ListPolicies over an invalid value = %v, want an error naming the model", err)
	}
}

// TestViewSurvivesEtcdOutage: with etcd stopped the last good view stays; after a restart the
// watch resumes and later changes arrive.
func TestViewSurvivesEtcdOutage(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	own := etcdtest.Start(t, 1)
	cli := own.Client(t)
	s := newStore(t, cli)
	runStore(t, s)
	if _, err := s.PutPolicy(ctx, &adminv1.Policy{Model: "m", OverflowCap: 4}, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRegionDrain(ctx, "r1", true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "config before the outage", func() bool { return s.Snapshot().RegionDrained("r1") })

	own.Stop(0)
	time.Sleep(500 * time.Millisecond) // let the watch notice
	v := s.Snapshot()
	if v.Policy("m").OverflowCap != 4 || !v.RegionDrained("r1") {
		t.Fatal("the view lost its configuration while etcd was away")
	}
	if err := own.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRegionDrain(ctx, "r1", false); err != nil {
		t.Fatalf("undrain after restart: %v", err)
	}
	waitFor(t, "change after the restart", func() bool { return !s.Snapshot().RegionDrained("r1") })
	if s.Snapshot().Policy("m").OverflowCap != 4 {
		t.Fatal("policy lost after the restart")
	}
}

// TestReloadAfterCompaction: a watch cut off while its revisions are compacted loads everything
// again when it reconnects.
func TestReloadAfterCompaction(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	own := etcdtest.Start(t, 1)
	direct := own.Client(t)
	proxy := startProxy(t, strings.TrimPrefix(own.Endpoints()[0], "http://"))
	viaProxy, err := etcdtest.NewClient([]string{"http://" + proxy.addr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = viaProxy.Close() })
	reg := prometheus.NewRegistry()
	s, err := configstore.New(viaProxy, etcdtest.Discard, reg)
	if err != nil {
		t.Fatal(err)
	}
	runStore(t, s)

	proxy.cut(true)
	writer := newStore(t, direct)
	if _, err := writer.PutPolicy(ctx, &adminv1.Policy{Model: "m", OverflowCap: 1}, 0); err != nil {
		t.Fatal(err)
	}
	if err := writer.SetClusterDrain(ctx, "c1", true); err != nil {
		t.Fatal(err)
	}
	resp, err := direct.Get(ctx, "compact-marker")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := direct.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	proxy.cut(false)
	waitFor(t, "reload after compaction", func() bool {
		v := s.Snapshot()
		return v.Policy("m").OverflowCap == 1 && v.ClusterDrained("c1")
	})
	if n := metricValue(t, reg, "switchyard_router_config_reloads_total"); n < 1 {
		t.Fatalf("reloads = %v, want >= 1", n)
	}
}

// metricValue returns the value of the unlabelled counter or gauge name in reg.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		m := mf.GetMetric()[0]
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		return m.GetGauge().GetValue()
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}
