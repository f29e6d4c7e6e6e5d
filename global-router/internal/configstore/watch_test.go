package configstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/contract/poll"
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
	if p, err := v.Policy("any-model"); !errors.Is(err, routing.ErrPolicyNotLoaded) {
		t.Fatalf("policy before the first load = %+v, %v; want ErrPolicyNotLoaded, not the defaults", p, err)
	}
	runStore(t, s)
	v = s.Snapshot()
	if got := policyOf(v, "any-model"); got.OverflowThreshold != 0.8 || got.AllowedRegions != nil || got.OverflowCap != 0 {
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
	if policyOf(reader.Snapshot(), "old").OverflowCap != 1 {
		t.Fatal("initial load missed the stored policy")
	}

	before := reader.Snapshot()
	p, err := writer.PutPolicy(
		ctx,
		&adminv1.Policy{Model: "m", OverflowThreshold: proto.Float64(0.5), AllowedRegions: []string{"eu-west-1"}},
		0,
	)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(
		t,
		waitTimeout,
		func() bool { return policyOf(reader.Snapshot(), "m").OverflowThreshold == 0.5 },
		"policy in the reader's view",
	)
	select {
	case <-before.Replaced():
	default:
		t.Fatal("the old view was not marked replaced")
	}
	v := reader.Snapshot()
	if got := policyOf(
		v,
		"m",
	); !slices.Equal(got.AllowedRegions, []string{"eu-west-1"}) ||
		v.Revision() < p.GetRevision() {
		t.Fatalf("view policy %+v at revision %d, want eu-west-1 only at >= %d", got, v.Revision(), p.GetRevision())
	}
	if policyOf(before, "m").OverflowThreshold != 0.8 {
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
				return !ok && policyOf(v, "m").OverflowThreshold == 0.8
			}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		poll.Until(t, waitTimeout, func() bool { return st.cond(reader.Snapshot()) }, st.name)
	}
	if n := metricValue(t, reg, "switchyard_router_config_events_total"); n < 5 {
		t.Fatalf("events applied = %v, want >= 5", n)
	}
}

// TestUnreadableStoredValueFailsClosed: a value written around the API that cannot be read makes
// its model refused, never routed with the defaults nor with the looser policy it replaced; other
// models keep theirs; a fix written later applies through the watch, and a deletion returns the
// model to the defaults.
func TestUnreadableStoredValueFailsClosed(t *testing.T) {
	tests := []struct {
		name, value string
	}{
		{"garbage bytes", "\x00\xffnot json"},
		{"wrong json", `["eu-west-1"]`},
		{"unknown field", `{"model":"m","allowed_region":["eu-west-1"]}`},
		{"invalid region name", `{"model":"m","allowed_regions":["eu west 1"]}`},
		{"other model", `{"model":"n","allowed_regions":["eu-west-1"]}`},
		{"invalid field value", `{"model":"m","overflow_cap":-5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			cli := nsClient(t, shared)
			reg := prometheus.NewRegistry()
			s, err := configstore.New(cli, etcdtest.Discard, reg)
			if err != nil {
				t.Fatal(err)
			}
			runStore(t, s)
			// The looser policy the bad value replaces allows every region.
			if _, err := s.PutPolicy(ctx, &adminv1.Policy{Model: "m", OverflowCap: 3}, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := s.PutPolicy(
				ctx,
				&adminv1.Policy{Model: "other", AllowedRegions: []string{"us-east-1"}},
				0,
			); err != nil {
				t.Fatal(err)
			}
			poll.Until(t, waitTimeout, func() bool { return policyOf(s.Snapshot(), "m").OverflowCap == 3 }, "good policies")
			put, err := cli.Put(ctx, configstore.PolicyKey("m"), tt.value)
			if err != nil {
				t.Fatal(err)
			}
			rev := put.Header.Revision
			poll.Until(t, waitTimeout, func() bool { _, ok := s.Snapshot().Unreadable("m"); return ok }, "the model refused")
			checkRefused(t, s.Snapshot(), "m", rev)
			if got := policyOf(s.Snapshot(), "other"); !slices.Equal(got.AllowedRegions, []string{"us-east-1"}) {
				t.Fatalf("another model's policy = %+v, want its own", got)
			}
			if n := metricValue(t, reg, "switchyard_router_config_invalid_values_total"); n != 1 {
				t.Fatalf("invalid values counted %v, want 1", n)
			}
			if n := metricValue(t, reg, "switchyard_router_config_unreadable_policies"); n != 1 {
				t.Fatalf("unreadable policies gauge %v, want 1", n)
			}
			checkAdminReads(t, s, rev)

			// Fixed through the API (naming the unreadable value's revision), the model routes again.
			if _, err := s.PutPolicy(ctx, &adminv1.Policy{Model: "m", AllowedRegions: []string{"eu-west-1"}}, rev); err != nil {
				t.Fatalf("replace the unreadable value: %v", err)
			}
			poll.Until(t, waitTimeout, func() bool { _, err := s.Snapshot().Policy("m"); return err == nil }, "the fix applied")
			if got := policyOf(s.Snapshot(), "m"); !slices.Equal(got.AllowedRegions, []string{"eu-west-1"}) {
				t.Fatalf("fixed policy = %+v, want eu-west-1 only", got)
			}
			if n := metricValue(t, reg, "switchyard_router_config_unreadable_policies"); n != 0 {
				t.Fatalf("unreadable policies gauge after the fix %v, want 0", n)
			}

			// Broken again and deleted: no policy stored means the defaults.
			if _, err := cli.Put(ctx, configstore.PolicyKey("m"), tt.value); err != nil {
				t.Fatal(err)
			}
			poll.Until(t, waitTimeout, func() bool { _, ok := s.Snapshot().Unreadable("m"); return ok }, "refused again")
			if err := s.DeletePolicy(ctx, "m", 0); err != nil {
				t.Fatalf("delete the unreadable value: %v", err)
			}
			poll.Until(t, waitTimeout, func() bool {
				p, err := s.Snapshot().Policy("m")
				return err == nil && p.OverflowThreshold == 0.8 && p.AllowedRegions == nil && p.OverflowCap == 0
			}, "defaults after the delete")
			if len(s.Snapshot().UnreadablePolicies()) != 0 {
				t.Fatalf("unreadable after the delete: %v", s.Snapshot().UnreadablePolicies())
			}
		})
	}
}

// checkRefused checks that v refuses model, whose value stored at rev cannot be read.
func checkRefused(t *testing.T, v *configstore.View, model string, rev int64) {
	t.Helper()
	if p, err := v.Policy(
		model,
	); !errors.Is(err, routing.ErrPolicyUnreadable) ||
		!strings.Contains(err.Error(), configstore.PolicyKey(model)) {
		t.Fatalf("Policy(%s) = %+v, %v; want ErrPolicyUnreadable naming the key", model, p, err)
	}
	if _, ok := v.StoredPolicy(model); ok {
		t.Fatalf("StoredPolicy(%s) still returns the replaced policy", model)
	}
	u, ok := v.Unreadable(model)
	if !ok || u.Model != model || u.Revision != rev || u.Reason == "" {
		t.Fatalf("Unreadable(%s) = %+v, %v; want revision %d with a reason", model, u, ok, rev)
	}
	if all := v.UnreadablePolicies(); len(all) != 1 || all[0] != u || slices.Contains(v.Models(), model) {
		t.Fatalf("UnreadablePolicies = %v, Models = %v", all, v.Models())
	}
}

// checkAdminReads checks what the admin API's reads make of the unreadable value of "m" stored at
// rev: GetPolicy fails with ErrUnreadable naming the revision, ListPolicies lists it apart.
func checkAdminReads(t *testing.T, s *configstore.Store, rev int64) {
	t.Helper()
	ctx := testCtx(t)
	_, err := s.GetPolicy(ctx, "m")
	if !errors.Is(err, configstore.ErrUnreadable) || !strings.Contains(err.Error(), fmt.Sprintf("revision %d", rev)) {
		t.Fatalf("GetPolicy of an unreadable value = %v, want ErrUnreadable naming revision %d", err, rev)
	}
	list, bad, err := s.ListPolicies(ctx)
	if err != nil || len(list) != 1 || list[0].GetModel() != "other" {
		t.Fatalf("ListPolicies = %v, %v; want the readable policy of other", list, err)
	}
	if len(bad) != 1 || bad[0].Model != "m" || bad[0].Revision != rev || bad[0].Reason == "" {
		t.Fatalf("ListPolicies unreadable = %+v, want m at revision %d with a reason", bad, rev)
	}
}

// TestUnreadableOnLoad: a value that cannot be read when the store loads (at start, or again
// after a compaction) refuses its model from the first view on, and is logged once.
func TestUnreadableOnLoad(t *testing.T) {
	ctx := testCtx(t)
	cli := nsClient(t, shared)
	if _, err := cli.Put(
		ctx,
		configstore.PolicyKey("m"),
		`{"model":"m","allowed_regions":["eu-west-1"],"region_pin":true}`,
	); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Put(ctx, configstore.PolicyKey("ok"), `{"model":"ok","allowed_regions":["eu-west-1"]}`)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	s, err := configstore.New(cli, slog.New(slog.NewTextHandler(&logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot().Policy("ok"); !errors.Is(err, routing.ErrPolicyNotLoaded) {
		t.Fatalf("Policy before the first load = %v, want ErrPolicyNotLoaded", err)
	}
	runStore(t, s)
	checkRefused(t, s.Snapshot(), "m", resp.Header.Revision-1)
	if got := policyOf(s.Snapshot(), "ok"); !slices.Equal(got.AllowedRegions, []string{"eu-west-1"}) {
		t.Fatalf("readable policy = %+v", got)
	}
	// Unrelated changes keep the model refused and do not log it again.
	for i := range 3 {
		if err := s.SetClusterDrain(ctx, fmt.Sprintf("c%d", i), true); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, waitTimeout, func() bool { return s.Snapshot().ClusterDrained("c2") }, "drains")
	checkRefused(t, s.Snapshot(), "m", resp.Header.Revision-1)
	if n := strings.Count(logs.String(), "stored policy unreadable"); n != 1 {
		t.Fatalf("unreadable value logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "key="+configstore.PolicyKey("m")) ||
		!strings.Contains(logs.String(), "region_pin") {
		t.Fatalf("the log line does not name the key and the reason:\n%s", logs.String())
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
	poll.Until(t, waitTimeout, func() bool { return s.Snapshot().RegionDrained("r1") }, "config before the outage")

	own.Stop(0)
	time.Sleep(500 * time.Millisecond) // let the watch notice
	v := s.Snapshot()
	if policyOf(v, "m").OverflowCap != 4 || !v.RegionDrained("r1") {
		t.Fatal("the view lost its configuration while etcd was away")
	}
	if err := own.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRegionDrain(ctx, "r1", false); err != nil {
		t.Fatalf("undrain after restart: %v", err)
	}
	poll.Until(t, waitTimeout, func() bool { return !s.Snapshot().RegionDrained("r1") }, "change after the restart")
	if policyOf(s.Snapshot(), "m").OverflowCap != 4 {
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
	poll.Until(t, waitTimeout, func() bool {
		v := s.Snapshot()
		return policyOf(v, "m").OverflowCap == 1 && v.ClusterDrained("c1")
	}, "reload after compaction")
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

// syncBuffer is a bytes.Buffer safe for concurrent use (a logger's destination).
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
