package dnssync_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/global-router/internal/dnssync"
	"github.com/switchyard-dev/switchyard/global-router/internal/dnssync/route53test"
	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd/etcdtest"
)

const zone = "Z0SWITCHYARD"

func testConfig() dnssync.Config {
	cfg := dnssync.DefaultConfig()
	cfg.HostedZoneID = "/hostedzone/" + zone
	cfg.RecordName = "API.example.com"
	cfg.Period = 200 * time.Millisecond
	cfg.LeaderPoll = 20 * time.Millisecond
	cfg.RetryMin = 20 * time.Millisecond
	cfg.RetryMax = 200 * time.Millisecond
	cfg.Targets = map[string]dnssync.Target{
		"us-east-1": {Values: []string{"192.0.2.1", "192.0.2.2"}, HealthCheckID: "hc-use1"},
		"eu-west-1": {
			AliasDNSName:         "router-euw1.elb.eu-west-1.amazonaws.com",
			AliasHostedZoneID:    "Z32O12XQLNTSW2",
			EvaluateTargetHealth: true,
		},
	}
	return cfg
}

func ttl(n int64) *int64 { return &n }

// foreign are records of the zone the sync must never touch: another name, another type of the
// same name, and a latency record of the same name and type for a region it does not own.
var foreign = []route53test.RecordSet{
	{Name: "www.example.com.", Type: "A", TTL: ttl(300), ResourceRecords: []route53test.Value{{Value: "198.51.100.7"}}},
	{
		Name:            "api.example.com.",
		Type:            "TXT",
		TTL:             ttl(300),
		ResourceRecords: []route53test.Value{{Value: `"owner=dns-team"`}},
	},
	{
		Name:            "api.example.com.",
		Type:            "A",
		SetIdentifier:   "ap-south-1",
		Region:          "ap-south-1",
		TTL:             ttl(60),
		ResourceRecords: []route53test.Value{{Value: "203.0.113.9"}},
	},
}

// owned returns the latency regions of the A records of api.example.com the sync owns in the fake.
func owned(fake *route53test.Server) []string {
	var out []string
	for _, rs := range fake.Records(zone) {
		if rs.Name == "api.example.com." && rs.Type == "A" && rs.SetIdentifier != "ap-south-1" {
			out = append(out, rs.SetIdentifier)
		}
	}
	slices.Sort(out)
	return out
}

func hasOwned(fake *route53test.Server, want ...string) func() bool {
	return func() bool { return slices.Equal(owned(fake), want) }
}

// checkForeign fails the test when a record the sync does not own was changed.
func checkForeign(t *testing.T, fake *route53test.Server) {
	t.Helper()
	for _, f := range foreign {
		i := slices.IndexFunc(fake.Records(zone), func(rs route53test.RecordSet) bool { return reflect.DeepEqual(rs, f) })
		if i < 0 {
			t.Errorf("foreign record %s %s %q was changed or removed", f.Name, f.Type, f.SetIdentifier)
		}
	}
}

// startSyncer runs a store, an elector and a syncer over the namespace ns against endpoint.
func startSyncer(
	t *testing.T,
	ns, candidate string,
	ep *route53test.Endpoint,
	reg prometheus.Registerer,
) (*configstore.Store, *configstore.Elector, func()) {
	t.Helper()
	cli := nsClient(t, ns)
	store := runStore(t, cli)
	el := newElector(t, cli, "dns-sync", candidate)
	stopEl := goRun(t, el.Run)
	s, err := dnssync.New(testConfig(), newClient(ep.URL), store, el, etcdtest.Discard, reg)
	if err != nil {
		t.Fatal(err)
	}
	stopSync := goRun(t, s.Run)
	return store, el, func() { stopSync(); stopEl() }
}

func TestDrainRemovesAndUndrainRestoresRecords(t *testing.T) {
	fake := route53test.New()
	stale := route53test.RecordSet{Name: "api.example.com.", Type: "A", SetIdentifier: "us-east-1", Region: "us-east-1",
		TTL: ttl(60), ResourceRecords: []route53test.Value{{Value: "192.0.2.99"}}}
	fake.AddZone(zone, append(slices.Clone(foreign), stale)...)
	reg := prometheus.NewPedanticRegistry()
	store, _, _ := startSyncer(t, newNamespace(), "r1", fake.Start(t), reg)
	ctx := testCtx(t)

	poll.Until(t, waitTimeout, hasOwned(fake, "eu-west-1", "us-east-1"), "both regions published")
	checkRecordShapes(t, fake)
	if err := store.SetRegionDrain(ctx, "eu-west-1", true); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitTimeout, hasOwned(fake, "us-east-1"), "drained region removed")
	checkForeign(t, fake)
	poll.Until(
		t,
		waitTimeout,
		func() bool { return metricValue(t, reg, "switchyard_router_dnssync_records", "") == 1 },
		"records gauge at 1",
	)
	// Draining every region keeps every record (fail open) rather than emptying the name.
	if err := store.SetRegionDrain(ctx, "us-east-1", true); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitTimeout, hasOwned(fake, "eu-west-1", "us-east-1"), "all drained: all published")
	for _, r := range []string{"us-east-1", "eu-west-1"} {
		if err := store.SetRegionDrain(ctx, r, r == "us-east-1"); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, waitTimeout, hasOwned(fake, "eu-west-1"), "us-east-1 removed, eu-west-1 restored")
	checkForeign(t, fake)
}

// checkRecordShapes checks the published records field by field.
func checkRecordShapes(t *testing.T, fake *route53test.Server) {
	t.Helper()
	for _, rs := range fake.Records(zone) {
		switch {
		case rs.Name != "api.example.com." || rs.Type != "A" || rs.SetIdentifier == "ap-south-1":
		case rs.SetIdentifier == "us-east-1":
			vals := []route53test.Value{{Value: "192.0.2.1"}, {Value: "192.0.2.2"}}
			if rs.Region != "us-east-1" || *rs.TTL != 60 || !slices.Equal(rs.ResourceRecords, vals) ||
				rs.HealthCheckID != "hc-use1" {
				t.Errorf("us-east-1 record = %+v", rs)
			}
		case rs.SetIdentifier == "eu-west-1":
			a := rs.AliasTarget
			if rs.Region != "eu-west-1" || rs.TTL != nil || a == nil ||
				a.DNSName != "router-euw1.elb.eu-west-1.amazonaws.com." ||
				a.HostedZoneID != "Z32O12XQLNTSW2" ||
				!a.EvaluateTargetHealth {
				t.Errorf("eu-west-1 record = %+v alias %+v", rs, a)
			}
		}
	}
}

// TestOnlyTheLeaderWrites runs two routers' syncers, each with its own Route 53 endpoint, in one
// real etcd election: only the leader calls Route 53; when it stops, the other takes over.
func TestOnlyTheLeaderWrites(t *testing.T) {
	fake := route53test.New()
	fake.AddZone(zone, foreign...)
	ns := newNamespace()
	eps := []*route53test.Endpoint{fake.Start(t), fake.Start(t)}
	var stores [2]*configstore.Store
	var els [2]*configstore.Elector
	var stops [2]func()
	for i, name := range []string{"a", "b"} {
		stores[i], els[i], stops[i] = startSyncer(t, ns, name, eps[i], nil)
	}
	poll.Until(t, waitTimeout, func() bool { return els[0].IsLeader() != els[1].IsLeader() }, "one leader")
	poll.Until(t, waitTimeout, hasOwned(fake, "eu-west-1", "us-east-1"), "records published")
	if err := stores[0].SetRegionDrain(testCtx(t), "us-east-1", true); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitTimeout, hasOwned(fake, "eu-west-1"), "drained region removed")

	leader, follower := 0, 1
	if els[1].IsLeader() {
		leader, follower = 1, 0
	}
	if n := eps[follower].Calls(route53test.OpList) + eps[follower].Calls(route53test.OpChange); n != 0 {
		t.Fatalf("the follower made %d Route 53 calls, want 0", n)
	}
	if n := eps[leader].Calls(route53test.OpChange); n < 2 {
		t.Fatalf("the leader made %d changes, want >= 2", n)
	}
	stops[leader]()
	poll.Until(t, waitTimeout, els[follower].IsLeader, "the follower takes over")
	if err := stores[follower].SetRegionDrain(testCtx(t), "us-east-1", false); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitTimeout, hasOwned(fake, "eu-west-1", "us-east-1"), "undrained region restored by the new leader")
	if eps[follower].Calls(route53test.OpChange) == 0 {
		t.Fatal("the new leader made no change")
	}
	checkForeign(t, fake)
}

func TestFailuresAreRetriedAndCounted(t *testing.T) {
	tests := []struct {
		name, code, kind string
		status           int
	}{
		{"internal error", "InternalFailure", "failed", 500},
		{"throttling", "Throttling", "throttled", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := route53test.New()
			fake.AddZone(zone, foreign...)
			fake.FailNext(5, tt.status, tt.code) // more than the SDK's two attempts per call
			reg := prometheus.NewPedanticRegistry()
			startSyncer(t, newNamespace(), "r1", fake.Start(t), reg)
			poll.Until(t, waitTimeout, hasOwned(fake, "eu-west-1", "us-east-1"), "records published after the failures")
			want := fmt.Sprintf("switchyard_router_dnssync_errors_total{kind=%q}", tt.kind)
			if n := metricValue(t, reg, "switchyard_router_dnssync_errors_total", tt.kind); n < 2 {
				t.Errorf("%s = %v, want >= 2", want, n)
			}
			if n := fake.Calls(route53test.OpList); n < 6 {
				t.Errorf("list calls = %d, want >= 6 (5 failures, then success)", n)
			}
			poll.Until(t, waitTimeout, func() bool {
				return metricValue(
					t,
					reg,
					"switchyard_router_dnssync_last_success_timestamp_seconds",
					"",
				) > float64(
					time.Now().Add(-time.Hour).Unix(),
				)
			}, "last success set")
		})
	}
}

// metricValue returns the value of the counter or gauge name whose label kind is kind ("" for
// no label).
func metricValue(t *testing.T, g prometheus.Gatherer, name, kind string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if kind != "" && !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetValue() == kind }) {
				continue
			}
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// TestNothingBeforeTheConfigIsLoaded: a leader whose config store has not loaded etcd yet (its
// view would say nothing is drained) makes no call, so it cannot restore a drained region.
func TestNothingBeforeTheConfigIsLoaded(t *testing.T) {
	fake := route53test.New()
	fake.AddZone(zone, foreign...)
	ep := fake.Start(t)
	cli := nsClient(t, newNamespace())
	store, err := configstore.New(cli, etcdtest.Discard, nil) // never run: never loaded
	if err != nil {
		t.Fatal(err)
	}
	el := newElector(t, cli, "dns-sync", "r1")
	goRun(t, el.Run)
	s, err := dnssync.New(testConfig(), newClient(ep.URL), store, el, etcdtest.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	goRun(t, s.Run)
	poll.Until(t, waitTimeout, el.IsLeader, "leadership")
	time.Sleep(500 * time.Millisecond) // a loaded config would have been reconciled twice by now
	if n := ep.Calls(route53test.OpList) + ep.Calls(route53test.OpChange); n != 0 {
		t.Fatalf("%d Route 53 calls before the config was loaded, want 0", n)
	}
}
