package admin_test

import (
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/switchyard-dev/switchyard/contract/poll"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
)

// TestUnreadablePolicy writes policy values straight into etcd that the router cannot read: the
// admin API shows each clearly (GetPolicy fails DATA_LOSS naming the revision, ListPolicies lists
// it apart from the readable ones, ExplainRoute reports the refusal with no policy in force), and
// a PutPolicy naming its revision replaces it.
func TestUnreadablePolicy(t *testing.T) {
	tests := []struct {
		name, value string
	}{
		{"garbage", "\x00\x01{{"},
		{"unknown field", `{"model":"llama","allowed_regions":["us-east-1"],"deny_regions":["eu-west-1"]}`},
		{"invalid region", `{"model":"llama","allowed_regions":["us-east-1/"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := testCtx(t)
			if _, err := e.Store.PutPolicy(ctx, &adminv1.Policy{Model: "mistral", OverflowCap: 2}, 0); err != nil {
				t.Fatal(err)
			}
			put, err := e.Etcd.Put(ctx, configstore.PolicyKey(admintest.Model), tt.value)
			if err != nil {
				t.Fatal(err)
			}
			rev := put.Header.Revision
			poll.Until(
				t,
				admintest.WaitTimeout,
				func() bool { _, ok := e.Store.Snapshot().Unreadable(admintest.Model); return ok },
				"the value in the view",
			)

			_, err = e.Client.GetPolicy(ctx, connect.NewRequest(&adminv1.GetPolicyRequest{Model: admintest.Model}))
			wantCode(t, err, connect.CodeDataLoss)
			if msg := connect.NewError(connect.CodeOf(err), err).
				Message(); !strings.Contains(msg, "revision") ||
				!strings.Contains(msg, "refused") {
				t.Fatalf("GetPolicy error %q does not say the model is refused and which revision to replace", msg)
			}

			list, err := e.Client.ListPolicies(ctx, connect.NewRequest(&adminv1.ListPoliciesRequest{}))
			if err != nil {
				t.Fatalf("ListPolicies over an unreadable value: %v", err)
			}
			ps, bad := list.Msg.GetPolicies(), list.Msg.GetUnreadable()
			if len(ps) != 1 || ps[0].GetModel() != "mistral" {
				t.Fatalf("readable policies = %v, want mistral's", ps)
			}
			if len(bad) != 1 || bad[0].GetModel() != admintest.Model || bad[0].GetRevision() != rev || bad[0].GetError() == "" {
				t.Fatalf("unreadable = %v, want %s at revision %d with its error", bad, admintest.Model, rev)
			}

			ex := explain(t, e, &adminv1.ExplainRouteRequest{Model: admintest.Model})
			if ex.GetRoute() != "" || ex.GetChosenCluster() != "" || ex.GetPolicy() != nil ||
				!strings.Contains(ex.GetError(), "cannot be read") {
				t.Fatalf("ExplainRoute of a model with an unreadable policy = %v, want a refusal with no policy in force", ex)
			}

			fixed, err := e.Client.PutPolicy(ctx, connect.NewRequest(&adminv1.PutPolicyRequest{
				Policy: &adminv1.Policy{Model: admintest.Model, AllowedRegions: []string{"us-east-1"}, Revision: rev}}))
			if err != nil {
				t.Fatalf("replace the unreadable value at its revision: %v", err)
			}
			poll.Until(
				t,
				admintest.WaitTimeout,
				func() bool { _, ok := e.Store.Snapshot().StoredPolicy(admintest.Model); return ok },
				"the fix in the view",
			)
			ex = explain(t, e, &adminv1.ExplainRouteRequest{Model: admintest.Model})
			if ex.GetChosenCluster() != "c1" || ex.GetPolicy().GetRevision() != fixed.Msg.GetPolicy().GetRevision() ||
				!slices.Equal(ex.GetPolicy().GetAllowedRegions(), []string{"us-east-1"}) {
				t.Fatalf("ExplainRoute after the fix = %v, want c1 under the fixed policy", ex)
			}
		})
	}
}
