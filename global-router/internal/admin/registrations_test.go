package admin_test

import (
	"testing"

	"connectrpc.com/connect"

	"github.com/switchyard-dev/switchyard/contract/poll"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
	"github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1/adminv1connect"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
)

func testRegistration() *adminv1.ClusterRegistration {
	return &adminv1.ClusterRegistration{Cluster: "c1", Region: "us-east-1",
		GatewayUrls: []string{"https://gw.c1.example.com"}, PublicKeys: [][]byte{testPublicKey(7)}}
}

func TestRegistrationLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	c := e.Client
	register := func(r *adminv1.ClusterRegistration) (*adminv1.ClusterRegistration, error) {
		resp, err := c.RegisterCluster(ctx, connect.NewRequest(&adminv1.RegisterClusterRequest{Registration: r}))
		if err != nil {
			return nil, err
		}
		return resp.Msg.GetRegistration(), nil
	}
	list := func() *adminv1.ListRegistrationsResponse {
		resp, err := c.ListRegistrations(ctx, connect.NewRequest(&adminv1.ListRegistrationsRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Msg
	}
	if got := list(); len(got.GetRegistrations()) != 0 || got.GetIdentityMode() != "compatibility" {
		t.Fatalf("initial list = %v", got)
	}

	stored := wantCreatedOnce(t, register, testRegistration)
	poll.Until(t, admintest.WaitTimeout, func() bool { return list().GetIdentityMode() == "strict" }, "strict mode")
	if got := list().GetRegistrations(); len(got) != 1 || got[0].GetRevision() != stored.GetRevision() {
		t.Fatalf("list = %v", got)
	}

	wantInvalid(t, register, func() *adminv1.ClusterRegistration {
		r := testRegistration()
		r.Revision = stored.GetRevision()
		return r
	}, []invalidEdit[*adminv1.ClusterRegistration]{
		{
			"cleartext url",
			"gateway_urls[0]",
			func(r *adminv1.ClusterRegistration) { r.GatewayUrls = []string{"http://gw.c1.example.com"} },
		},
		{"no key", "public_keys", func(r *adminv1.ClusterRegistration) { r.PublicKeys = nil }},
		{"no cluster", "cluster", func(r *adminv1.ClusterRegistration) { r.Cluster = "" }},
		{"bad region", "region", func(r *adminv1.ClusterRegistration) { r.Region = "a b" }},
	})
	_, err := c.RegisterCluster(ctx, connect.NewRequest(&adminv1.RegisterClusterRequest{}))
	wantCode(t, err, connect.CodeInvalidArgument)

	_, err = c.RevokeCluster(
		ctx,
		connect.NewRequest(&adminv1.RevokeClusterRequest{Cluster: "c1", Revision: stored.GetRevision() + 100}),
	)
	wantCode(t, err, connect.CodeFailedPrecondition)
	if _, err := c.RevokeCluster(
		ctx,
		connect.NewRequest(&adminv1.RevokeClusterRequest{Cluster: "c1", Revision: stored.GetRevision()}),
	); err != nil {
		t.Fatal(err)
	}
	_, err = c.RevokeCluster(ctx, connect.NewRequest(&adminv1.RevokeClusterRequest{Cluster: "c1"}))
	wantCode(t, err, connect.CodeNotFound)
	_, err = c.RevokeCluster(ctx, connect.NewRequest(&adminv1.RevokeClusterRequest{Cluster: "bad/name"}))
	wantCode(t, err, connect.CodeInvalidArgument)
	poll.Until(
		t,
		admintest.WaitTimeout,
		func() bool { return list().GetIdentityMode() == "compatibility" },
		"compatibility mode again",
	)
}

func TestRegistrationNeedsTheToken(t *testing.T) {
	e := newEnv(t)
	anon := adminv1connect.NewAdminServiceClient(e.Server.Client(), e.Server.URL)
	_, err := anon.RegisterCluster(
		testCtx(t),
		connect.NewRequest(&adminv1.RegisterClusterRequest{Registration: testRegistration()}),
	)
	wantCode(t, err, connect.CodeUnauthenticated)
	_, err = anon.RevokeCluster(testCtx(t), connect.NewRequest(&adminv1.RevokeClusterRequest{Cluster: "c1"}))
	wantCode(t, err, connect.CodeUnauthenticated)
}
