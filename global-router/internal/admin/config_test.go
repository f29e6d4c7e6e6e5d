package admin_test

import (
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/contract/poll"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
)

func TestDrains(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	steps := []struct {
		name string
		call func() error
		want func(c1, c2 *adminv1.Cluster) bool
	}{
		{"drain cluster", func() error {
			resp, err := e.Client.DrainCluster(ctx, connect.NewRequest(&adminv1.DrainClusterRequest{Cluster: "c1", Drain: true}))
			if err == nil && (resp.Msg.GetCluster() != "c1" || !resp.Msg.GetDrained()) {
				t.Errorf("drain response = %v", resp.Msg)
			}
			return err
		}, func(c1, c2 *adminv1.Cluster) bool { return c1.GetDrained() && !c2.GetDrained() }},
		{"undrain cluster", func() error {
			resp, err := e.Client.DrainCluster(ctx, connect.NewRequest(&adminv1.DrainClusterRequest{Cluster: "c1"}))
			if err == nil && resp.Msg.GetDrained() {
				t.Errorf("undrain response = %v", resp.Msg)
			}
			return err
		}, func(c1, _ *adminv1.Cluster) bool { return !c1.GetDrained() }},
		{"drain region", func() error {
			resp, err := e.Client.DrainRegion(
				ctx,
				connect.NewRequest(&adminv1.DrainRegionRequest{Region: "eu-west-1", Drain: true}),
			)
			if err == nil && (resp.Msg.GetRegion() != "eu-west-1" || !resp.Msg.GetDrained()) {
				t.Errorf("drain region response = %v", resp.Msg)
			}
			return err
		}, func(c1, c2 *adminv1.Cluster) bool {
			return c2.GetRegionDrained() && !c2.GetDrained() && !c1.GetRegionDrained()
		}},
		{"undrain region", func() error {
			_, err := e.Client.DrainRegion(ctx, connect.NewRequest(&adminv1.DrainRegionRequest{Region: "eu-west-1"}))
			return err
		}, func(_, c2 *adminv1.Cluster) bool { return !c2.GetRegionDrained() }},
	}
	for _, st := range steps {
		if err := st.call(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		poll.Until(t, admintest.WaitTimeout, func() bool {
			cs := listClusters(t, e, "")
			return st.want(findCluster(cs, "c1"), findCluster(cs, "c2"))
		}, st.name)
	}
	_, err := e.Client.DrainCluster(
		ctx,
		connect.NewRequest(&adminv1.DrainClusterRequest{Cluster: "bad/name", Drain: true}),
	)
	wantCode(t, err, connect.CodeInvalidArgument)
	if !strings.Contains(err.Error(), "cluster") {
		t.Errorf("error %q does not name the field", err)
	}
	_, err = e.Client.DrainRegion(ctx, connect.NewRequest(&adminv1.DrainRegionRequest{Drain: true}))
	wantCode(t, err, connect.CodeInvalidArgument)
}

func TestPolicyLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	c := e.Client
	put := func(p *adminv1.Policy) (*adminv1.Policy, error) {
		resp, err := c.PutPolicy(ctx, connect.NewRequest(&adminv1.PutPolicyRequest{Policy: p}))
		if err != nil {
			return nil, err
		}
		return resp.Msg.GetPolicy(), nil
	}
	_, err := c.GetPolicy(ctx, connect.NewRequest(&adminv1.GetPolicyRequest{Model: "llama"}))
	wantCode(t, err, connect.CodeNotFound)

	first, err := put(
		&adminv1.Policy{
			Model:             "llama",
			OverflowThreshold: proto.Float64(0.6),
			AllowedRegions:    []string{"us-east-1"},
			OverflowCap:       5,
			TtftSloMs:         800,
		},
	)
	if err != nil || first.GetRevision() <= 0 {
		t.Fatalf("create = %v, %v; want a stored policy with a revision", first, err)
	}
	_, err = put(&adminv1.Policy{Model: "llama", OverflowCap: 1}) // revision 0: create only
	wantCode(t, err, connect.CodeFailedPrecondition)

	second, err := put(
		&adminv1.Policy{Model: "llama", OverflowThreshold: proto.Float64(0.7), Revision: first.GetRevision()},
	)
	if err != nil || second.GetRevision() <= first.GetRevision() {
		t.Fatalf("update = %v, %v", second, err)
	}
	_, err = put(&adminv1.Policy{Model: "llama", OverflowCap: 2, Revision: first.GetRevision()}) // stale
	wantCode(t, err, connect.CodeFailedPrecondition)

	got, err := c.GetPolicy(ctx, connect.NewRequest(&adminv1.GetPolicyRequest{Model: "llama"}))
	if err != nil || !proto.Equal(got.Msg.GetPolicy(), second) {
		t.Fatalf("get = %v, %v; want %v", got.Msg.GetPolicy(), err, second)
	}
	if _, err := put(&adminv1.Policy{Model: "mistral"}); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListPolicies(ctx, connect.NewRequest(&adminv1.ListPoliciesRequest{}))
	if err != nil || len(list.Msg.GetPolicies()) != 2 || list.Msg.GetPolicies()[0].GetModel() != "llama" {
		t.Fatalf("list = %v, %v; want [llama mistral]", list.Msg.GetPolicies(), err)
	}

	_, err = c.DeletePolicy(
		ctx,
		connect.NewRequest(&adminv1.DeletePolicyRequest{Model: "llama", Revision: first.GetRevision()}),
	)
	wantCode(t, err, connect.CodeFailedPrecondition)
	del, err := c.DeletePolicy(
		ctx,
		connect.NewRequest(&adminv1.DeletePolicyRequest{Model: "llama", Revision: second.GetRevision()}),
	)
	if err != nil || del.Msg.GetModel() != "llama" {
		t.Fatalf("delete = %v, %v", del.Msg, err)
	}
	_, err = c.DeletePolicy(ctx, connect.NewRequest(&adminv1.DeletePolicyRequest{Model: "llama"}))
	wantCode(t, err, connect.CodeNotFound)
	_, err = c.GetPolicy(ctx, connect.NewRequest(&adminv1.GetPolicyRequest{Model: "llama"}))
	wantCode(t, err, connect.CodeNotFound)
}

func TestPutPolicyInvalidArgumentNamesField(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name   string
		policy *adminv1.Policy
		field  string
	}{
		{"no policy", nil, "policy"},
		{"no model", &adminv1.Policy{}, "model"},
		{"model with space", &adminv1.Policy{Model: "a b"}, "model"},
		{"threshold above 1", &adminv1.Policy{Model: "m", OverflowThreshold: proto.Float64(1.5)}, "overflow_threshold"},
		{"threshold zero", &adminv1.Policy{Model: "m", OverflowThreshold: proto.Float64(0)}, "overflow_threshold"},
		{"negative cap", &adminv1.Policy{Model: "m", OverflowCap: -1}, "overflow_cap"},
		{"bad region", &adminv1.Policy{Model: "m", AllowedRegions: []string{"us east"}}, "allowed_regions"},
		{"region twice", &adminv1.Policy{Model: "m", AllowedRegions: []string{"a", "a"}}, "allowed_regions"},
		{"unknown weight", &adminv1.Policy{Model: "m", ScorerWeights: map[string]float64{"magic": 1}}, "scorer_weights"},
		{"negative weight", &adminv1.Policy{Model: "m", ScorerWeights: map[string]float64{"rtt": -1}}, "scorer_weights"},
		{"negative revision", &adminv1.Policy{Model: "m", Revision: -3}, "revision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Client.PutPolicy(testCtx(t), connect.NewRequest(&adminv1.PutPolicyRequest{Policy: tt.policy}))
			wantCode(t, err, connect.CodeInvalidArgument)
			if !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("error %q does not name the field %s", err, tt.field)
			}
		})
	}
}

// TestConcurrentPutPolicy: writers racing with the same revision: exactly one wins, every other
// gets FailedPrecondition.
func TestConcurrentPutPolicy(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	base, err := e.Client.PutPolicy(
		ctx,
		connect.NewRequest(&adminv1.PutPolicyRequest{Policy: &adminv1.Policy{Model: "llama"}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	rev := base.Msg.GetPolicy().GetRevision()
	const writers = 8
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			p := &adminv1.Policy{Model: "llama", OverflowCap: int32(i + 1), Revision: rev}
			_, errs[i] = e.Client.PutPolicy(ctx, connect.NewRequest(&adminv1.PutPolicyRequest{Policy: p}))
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("writers %d and %d both won with revision %d", won, i, rev)
		case err == nil:
			won = i
		default:
			wantCode(t, err, connect.CodeFailedPrecondition)
		}
	}
	if won < 0 {
		t.Fatal("no writer won")
	}
	got, err := e.Client.GetPolicy(ctx, connect.NewRequest(&adminv1.GetPolicyRequest{Model: "llama"}))
	if err != nil || got.Msg.GetPolicy().GetOverflowCap() != int32(won+1) {
		t.Fatalf("stored policy = %v, %v; want the winner's cap %d", got.Msg.GetPolicy(), err, won+1)
	}
}
