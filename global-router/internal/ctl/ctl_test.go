package ctl_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/poll"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/global-router/internal/ctl"
)

func TestClusters(t *testing.T) {
	f := newFixture(t)
	table := f.run(t, "clusters")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "REGION") || !strings.Contains(lines[1], "c2") ||
		!strings.Contains(lines[2], "c1") {
		t.Fatalf("clusters table:\n%s", table)
	}

	out := f.run(t, "clusters", "-o", "json")
	var doc map[string][]map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("-o json is not JSON: %v\n%s", err, out)
	}
	cs := doc["clusters"]
	if len(cs) != 2 {
		t.Fatalf("clusters in JSON = %d, want 2:\n%s", len(cs), out)
	}
	c1 := cs[1]
	for _, field := range []string{"name", "region", "healthy", "stale", "signal_age_ms", "drained", "region_drained",
		"models", "free_kv_tokens", "total_kv_tokens", "queue_depth", "running", "gateway_urls", "rtt_ms", "in_flight"} {
		if _, ok := c1[field]; !ok {
			t.Errorf("cluster JSON lacks %q (proto names, unpopulated fields included): %v", field, c1)
		}
	}
	if c1["name"] != "c1" || c1["region"] != "us-east-1" || c1["healthy"] != true || c1["stale"] != false ||
		c1["drained"] != false {
		t.Errorf("c1 JSON = %v", c1)
	}
	var typed adminv1.ListClustersResponse
	if err := protojson.Unmarshal(
		[]byte(out),
		&typed,
	); err != nil ||
		typed.GetClusters()[1].GetModels()[0].GetReadyPods() != 4 {
		t.Errorf("JSON does not decode as ListClustersResponse: %v", err)
	}
	filtered := f.run(t, "clusters", "--model=nothing", "-o=json")
	if strings.Contains(filtered, `"c1"`) {
		t.Errorf("clusters --model=nothing lists c1:\n%s", filtered)
	}
}

// TestFlagsAroundCommand: flags work before, after and between the command and its operand,
// and the environment supplies --addr and --token-file.
func TestFlagsAroundCommand(t *testing.T) {
	f := newFixture(t)
	token := strings.TrimPrefix(f.tokenFile, "--token-file=")
	tests := []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"flags first", nil, []string{f.addr, f.tokenFile, "-o", "json", "drain", "c1"}},
		{"flags last", nil, []string{"drain", "c1", f.addr, f.tokenFile, "--output=json"}},
		{"flags between", nil, []string{f.addr, "drain", f.tokenFile, "c1", "-o=json"}},
		{"separate values", nil, []string{"--addr", f.env.Server.URL, "drain", "--token-file", token, "c1", "-o", "json"}},
		{
			"environment",
			map[string]string{ctl.EnvAddr: f.env.Server.URL, ctl.EnvTokenFile: token},
			[]string{"drain", "-o", "json", "c1"},
		},
		{
			"the command line wins over the environment",
			map[string]string{ctl.EnvAddr: "http://127.0.0.1:1", ctl.EnvTokenFile: "/no/such/token"},
			[]string{f.addr, f.tokenFile, "drain", "c1", "-o", "json"},
		},
		// Only --addr and --token-file come from the environment: a router's SWITCHYARD_REGION or
		// a stray SWITCHYARD_TIMEOUT would otherwise break the command.
		{
			"other flags never from the environment",
			map[string]string{
				ctl.EnvAddr:          f.env.Server.URL,
				ctl.EnvTokenFile:     token,
				"SWITCHYARD_TIMEOUT": "soon",
				"SWITCHYARD_MODEL":   "m",
				"SWITCHYARD_REGION":  "r",
			},
			[]string{"drain", "-o", "json", "c1"},
		},
		{
			"host and port only",
			nil,
			[]string{"--addr=" + strings.TrimPrefix(f.env.Server.URL, "http://"), f.tokenFile, "drain", "c1", "-o", "json"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			undrain := ctlRun(f.addr, f.tokenFile, "undrain", "c1")
			if undrain.code != 0 || undrain.stdout != "cluster c1 undrained\n" {
				t.Fatalf("undrain = %+v", undrain)
			}
			r := ctlRunEnv(tt.env, tt.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var resp adminv1.DrainClusterResponse
			if err := protojson.Unmarshal(
				[]byte(r.stdout),
				&resp,
			); err != nil || resp.GetCluster() != "c1" ||
				!resp.GetDrained() {
				t.Fatalf("output %q (%v), want the drain response", r.stdout, err)
			}
			poll.Until(
				t,
				admintest.WaitTimeout,
				func() bool { return f.env.Store.Snapshot().ClusterDrained("c1") },
				"c1 drained",
			)
		})
	}
}

func TestDrainRegion(t *testing.T) {
	f := newFixture(t)
	if out := f.run(t, "drain-region", "eu-west-1"); out != "region eu-west-1 drained\n" {
		t.Fatalf("drain-region printed %q", out)
	}
	poll.Until(
		t,
		admintest.WaitTimeout,
		func() bool { return f.env.Store.Snapshot().RegionDrained("eu-west-1") },
		"region drained",
	)
	if !strings.Contains(f.run(t, "clusters"), "region") {
		t.Error("clusters table does not show the region drain")
	}
	if out := f.run(t, "undrain-region", "eu-west-1"); out != "region eu-west-1 undrained\n" {
		t.Fatalf("undrain-region printed %q", out)
	}
	poll.Until(
		t,
		admintest.WaitTimeout,
		func() bool { return !f.env.Store.Snapshot().RegionDrained("eu-west-1") },
		"region undrained",
	)
}

func TestPolicyCommands(t *testing.T) {
	f := newFixture(t)
	out := f.run(t, "policy", "put", "--model=llama", "--overflow-threshold=0.6", "--allowed-regions=us-east-1,eu-west-1",
		"--overflow-cap=4", "--ttft-slo=750ms", "--scorer-weights=rtt=2,queue=1", "-o", "json")
	var put adminv1.PutPolicyResponse
	if err := protojson.Unmarshal([]byte(out), &put); err != nil {
		t.Fatal(err)
	}
	p := put.GetPolicy()
	if p.GetOverflowThreshold() != 0.6 || len(p.GetAllowedRegions()) != 2 || p.GetOverflowCap() != 4 ||
		p.GetTtftSloMs() != 750 ||
		p.GetScorerWeights()["rtt"] != 2 ||
		p.GetRevision() <= 0 {
		t.Fatalf("stored policy = %v", p)
	}
	rev := p.GetRevision()

	get := f.run(t, "policy", "get", "llama")
	for _, want := range []string{"overflow_threshold", "0.6", "us-east-1,eu-west-1", "750ms", "rtt=2"} {
		if !strings.Contains(get, want) {
			t.Errorf("policy get table lacks %q:\n%s", want, get)
		}
	}
	stale := ctlRun(f.addr, f.tokenFile, "policy", "put", "--model=llama", "--overflow-cap=9", "--revision=1")
	if stale.code != ctl.ExitAPIError || !strings.Contains(stale.stderr, "FAILED_PRECONDITION") {
		t.Fatalf("stale put = %+v, want exit 1 with FAILED_PRECONDITION", stale)
	}
	file := writeFile(t, "policy.json", `{"model": "llama", "overflowCap": 7, "allowed_regions": ["us-east-1"]}`)
	updated := f.run(t, "policy", "put", "-f", file, "--revision="+itoa(rev))
	if !strings.Contains(updated, "policy for llama stored at revision") {
		t.Fatalf("put -f printed %q", updated)
	}
	f.run(t, "policy", "put", "--model=mistral")
	list := f.run(t, "policy", "list")
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "llama") || !strings.Contains(lines[1], "7") ||
		!strings.HasPrefix(lines[2], "mistral") {
		t.Fatalf("policy list:\n%s", list)
	}
	if out := f.run(t, "policy", "delete", "mistral"); !strings.Contains(out, "deleted") {
		t.Fatalf("policy delete printed %q", out)
	}
	wrong := ctlRun(f.addr, f.tokenFile, "policy", "delete", "llama", "--revision="+itoa(rev))
	if wrong.code != ctl.ExitAPIError || !strings.Contains(wrong.stderr, "FAILED_PRECONDITION") {
		t.Fatalf("delete with an old revision = %+v", wrong)
	}
	missing := ctlRun(f.addr, f.tokenFile, "policy", "get", "mistral")
	if missing.code != ctl.ExitAPIError || !strings.Contains(missing.stderr, "NOT_FOUND") {
		t.Fatalf("get of a deleted policy = %+v, want NOT_FOUND", missing)
	}
}

// TestUnreadablePolicyShown: a policy value written to etcd around the admin API that cannot be
// read is listed apart by "policy list" (and its JSON), "policy get" fails with DATA_LOSS naming
// the revision, and "explain" says no policy is in force; "policy delete" removes it.
func TestUnreadablePolicyShown(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.run(t, "policy", "put", "--model=mistral", "--allowed-regions=us-east-1")
	put, err := f.env.Etcd.Put(ctx, configstore.PolicyKey("llama"), `{"model":"llama","allowed_regions":"eu-west-1"}`)
	if err != nil {
		t.Fatal(err)
	}
	rev := itoa(put.Header.Revision)
	poll.Until(
		t,
		admintest.WaitTimeout,
		func() bool { _, ok := f.env.Store.Snapshot().Unreadable("llama"); return ok },
		"the value in the view",
	)

	list := f.run(t, "policy", "list")
	t.Logf("policy list:\n%s", list)
	if !strings.Contains(list, "UNREADABLE") || !strings.Contains(list, "refused") ||
		!regexp.MustCompile(`(?m)^llama +`+rev+` +\S`).MatchString(list) ||
		!regexp.MustCompile(`(?m)^mistral +0\.8`).MatchString(list) {
		t.Fatalf("policy list does not show the unreadable value apart:\n%s", list)
	}
	var lr adminv1.ListPoliciesResponse
	if err := protojson.Unmarshal([]byte(f.run(t, "policy", "list", "-o", "json")), &lr); err != nil ||
		len(lr.GetUnreadable()) != 1 || lr.GetUnreadable()[0].GetModel() != "llama" || len(lr.GetPolicies()) != 1 {
		t.Fatalf("policy list -o json = %v (%v)", &lr, err)
	}
	get := ctlRun(f.addr, f.tokenFile, "policy", "get", "llama")
	if get.code != ctl.ExitAPIError || !strings.Contains(get.stderr, "DATA_LOSS") ||
		!strings.Contains(get.stderr, "revision "+rev) {
		t.Fatalf("policy get of an unreadable value = %+v, want DATA_LOSS naming revision %s", get, rev)
	}
	if out := f.run(
		t,
		"explain",
		"--model=llama",
	); !strings.Contains(out, "no route: ") ||
		!strings.Contains(out, "policy: none in force") {
		t.Fatalf("explain of a refused model:\n%s", out)
	}
	f.run(t, "policy", "delete", "llama")
	poll.Until(
		t,
		admintest.WaitTimeout,
		func() bool { _, ok := f.env.Store.Snapshot().Unreadable("llama"); return !ok },
		"deleted",
	)
	if out := f.run(t, "policy", "list"); strings.Contains(out, "UNREADABLE") {
		t.Fatalf("policy list after the delete:\n%s", out)
	}
}

func TestExplainAndMembers(t *testing.T) {
	f := newFixture(t)
	out := f.run(t, "explain", "--model=llama", "--prompt=hello world")
	if !strings.Contains(out, "route: local  chosen: c1  fallbacks: c2") || !strings.Contains(out, "CLUSTER") {
		t.Fatalf("explain table:\n%s", out)
	}
	// Each candidate's machine code stands beside its text.
	if !strings.Contains(out, "chosen_local  ") || !strings.Contains(out, contract.ReasonChosenLocal.Text()) {
		t.Fatalf("explain table without the chosen cluster's reason code:\n%s", out)
	}
	js := f.run(t, "-o", "json", "explain", "--model", "llama", "--prompt-tokens=2000")
	var doc map[string]any
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["chosen_cluster"] != "c1" || doc["route"] != "local" || doc["error"] != "" {
		t.Fatalf("explain JSON = %v", doc)
	}
	if cands, _ := doc["candidates"].([]any); len(cands) != 2 || cands[0].(map[string]any)["estimate_ms"] == nil ||
		cands[0].(map[string]any)["reason_code"] != string(contract.ReasonChosenLocal) {
		t.Fatalf("explain JSON candidates = %v", doc["candidates"])
	}
	poll.Until(t, admintest.WaitTimeout, func() bool {
		return strings.Count(f.run(t, "members"), "alive") == 3
	}, "three members in the table")
	members := f.run(t, "members", "-o", "json")
	var mr adminv1.ListMembersResponse
	if err := protojson.Unmarshal(
		[]byte(members),
		&mr,
	); err != nil || len(mr.GetMembers()) != 3 ||
		!strings.Contains(members, `"rtt_ms"`) {
		t.Fatalf("members JSON = %s (%v)", members, err)
	}
}

func TestProtocols(t *testing.T) {
	f := newFixture(t)
	for _, proto := range []string{"connect", "grpc", "grpc-web"} {
		t.Run(proto, func(t *testing.T) {
			if out := f.run(t, "clusters", "--protocol="+proto); !strings.Contains(out, "c1") {
				t.Fatalf("clusters over %s:\n%s", proto, out)
			}
			r := ctlRun(f.addr, "clusters", "--protocol="+proto)
			if r.code != ctl.ExitAPIError || !strings.Contains(r.stderr, "UNAUTHENTICATED") {
				t.Fatalf("clusters over %s without a token = %+v", proto, r)
			}
		})
	}
}

func TestWatch(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb admintest.Buffer
	done := make(chan int, 1)
	go func() {
		done <- ctl.Run(ctx, []string{"clusters", "--watch", "--interval=10ms", "-o", "json", f.addr, f.tokenFile},
			func(string) string { return "" }, &out, &errb)
	}()
	poll.Until(t, admintest.WaitTimeout, func() bool { return strings.Count(out.String(), "\n") >= 1 }, "the first table")
	if err := f.env.Store.SetClusterDrain(ctx, "c2", true); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, admintest.WaitTimeout, func() bool {
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		var resp adminv1.WatchClustersResponse
		if err := protojson.Unmarshal([]byte(lines[len(lines)-1]), &resp); err != nil {
			t.Fatalf("watch line is not one JSON message: %v", err)
		}
		return len(resp.GetClusters()) == 2 && resp.GetClusters()[0].GetDrained()
	}, "the drain in the watch")
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("watch ended with exit %d: %s", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("watch did not end after cancel")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
