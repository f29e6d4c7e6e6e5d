package admin_test

import (
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/poll"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
)

func explain(t *testing.T, e *admintest.Env, req *adminv1.ExplainRouteRequest) *adminv1.ExplainRouteResponse {
	t.Helper()
	resp, err := e.Client.ExplainRoute(testCtx(t), connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Msg
}

func candidate(r *adminv1.ExplainRouteResponse, cluster string) *adminv1.Candidate {
	for _, c := range r.GetCandidates() {
		if c.GetCluster() == cluster {
			return c
		}
	}
	return nil
}

func TestExplainRoute(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)

	local := explain(t, e, &adminv1.ExplainRouteRequest{Model: "llama", Prompt: "hello"})
	if local.GetRoute() != "local" || local.GetChosenCluster() != "c1" ||
		!slices.Equal(local.GetFallbacks(), []string{"c2"}) ||
		local.GetError() != "" {
		t.Fatalf("explain with room locally = %v, want local to c1 with fallback c2", local)
	}
	c1, c2 := candidate(local, "c1"), candidate(local, "c2")
	if !c1.GetChosen() || !c1.GetEligible() || c1.GetEstimateMs() <= 0 || c1.GetUtilization() != 0.25 ||
		!strings.HasPrefix(c1.GetReason(), "chosen") {
		t.Errorf("c1 candidate = %v", c1)
	}
	if c2.GetChosen() || !c2.GetEligible() || c2.GetRegion() != "eu-west-1" || c2.GetReason() == "" {
		t.Errorf("c2 candidate = %v", c2)
	}
	// Beside each text, its machine code, the contract's spelling of the same reason.
	for _, tc := range []struct {
		c    *adminv1.Candidate
		want contract.Reason
	}{{c1, contract.ReasonChosenLocal}, {c2, contract.ReasonLocalHasRoom}} {
		if tc.c.GetReasonCode() != string(tc.want) || tc.c.GetReason() != tc.want.Text() {
			t.Errorf(
				"%s: reason code %q (%q), want %q (%q)",
				tc.c.GetCluster(),
				tc.c.GetReasonCode(),
				tc.c.GetReason(),
				tc.want,
				tc.want.Text(),
			)
		}
	}
	if p := local.GetPolicy(); p.GetModel() != "llama" || p.GetOverflowThreshold() != 0.8 || p.GetRevision() != 0 {
		t.Errorf("policy in force with none stored = %v, want the defaults", p)
	}
	// The answer is the front door's own decision.
	view, d, err := e.Front.Decide("llama", []byte("hello"))
	if err != nil || view[d.Targets[0]].Cluster.Name != local.GetChosenCluster() || string(d.Route) != local.GetRoute() {
		t.Errorf("front door decides %v %v (%v), explain says %v", d.Route, d.Targets, err, local)
	}

	long := explain(t, e, &adminv1.ExplainRouteRequest{Model: "llama", Prompt: "hello", PromptTokens: 50_000})
	if candidate(long, "c1").GetEstimateMs() <= c1.GetEstimateMs() {
		t.Errorf(
			"a 50,000-token prompt is estimated %v ms, a short one %v ms",
			candidate(long, "c1").GetEstimateMs(),
			c1.GetEstimateMs(),
		)
	}

	if err := e.Store.SetClusterDrain(ctx, "c1", true); err != nil {
		t.Fatal(err)
	}
	poll.Until(
		t,
		admintest.WaitTimeout,
		func() bool { return e.Store.Snapshot().ClusterDrained("c1") },
		"drain in the view",
	)
	over := explain(t, e, &adminv1.ExplainRouteRequest{Model: "llama"})
	if over.GetRoute() != "overflow" || over.GetChosenCluster() != "c2" || candidate(over, "c1").GetEligible() ||
		candidate(over, "c1").GetReason() != "drained" ||
		candidate(over, "c1").GetReasonCode() != string(contract.ReasonDrained) {
		t.Fatalf("explain with c1 drained = %v, want overflow to c2 and c1 drained", over)
	}

	stored, err := e.Store.PutPolicy(ctx, &adminv1.Policy{Model: "llama", AllowedRegions: []string{"us-east-1"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(
		t,
		admintest.WaitTimeout,
		func() bool { _, ok := e.Store.Snapshot().StoredPolicy("llama"); return ok },
		"policy in the view",
	)
	none := explain(t, e, &adminv1.ExplainRouteRequest{Model: "llama"})
	if none.GetRoute() != "" || none.GetChosenCluster() != "" || none.GetError() == "" ||
		candidate(none, "c2").GetReason() != "region not allowed by policy" ||
		candidate(none, "c2").GetReasonCode() != string(contract.ReasonRegionNotAllowed) {
		t.Fatalf("explain with residency and the only allowed cluster drained = %v, want no route and an error", none)
	}
	if p := none.GetPolicy(); p.GetRevision() != stored.GetRevision() ||
		!slices.Equal(p.GetAllowedRegions(), []string{"us-east-1"}) {
		t.Errorf("policy in force = %v, want the stored one at revision %d", p, stored.GetRevision())
	}
	unknown := explain(t, e, &adminv1.ExplainRouteRequest{Model: "nobody-serves-this"})
	if unknown.GetError() == "" || len(unknown.GetCandidates()) != 2 || unknown.GetPolicy().GetOverflowThreshold() != 0.8 {
		t.Errorf("explain for an unserved model = %v", unknown)
	}
}

func TestExplainRouteInvalidArgument(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name  string
		req   *adminv1.ExplainRouteRequest
		field string
	}{
		{"no model", &adminv1.ExplainRouteRequest{}, "model"},
		{"other region", &adminv1.ExplainRouteRequest{Model: "llama", Region: "eu-west-1"}, "region"},
		{"huge prompt", &adminv1.ExplainRouteRequest{Model: "llama", PromptTokens: 1 << 30}, "prompt_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Client.ExplainRoute(testCtx(t), connect.NewRequest(tt.req))
			wantCode(t, err, connect.CodeInvalidArgument)
			if !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("error %q does not name %s", err, tt.field)
			}
		})
	}
	// The router's own region may be named explicitly.
	if r := explain(
		t,
		e,
		&adminv1.ExplainRouteRequest{Model: "llama", Region: admintest.Region},
	); r.GetChosenCluster() != "c1" {
		t.Fatalf("explain for the router's own region = %v", r)
	}
}
