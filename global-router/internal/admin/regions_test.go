package admin_test

import (
	"testing"

	"connectrpc.com/connect"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
)

func testRegionRegistration() *adminv1.RegionRegistration {
	return &adminv1.RegionRegistration{Region: "eu-west-1", PublicKeys: [][]byte{testPublicKey(8)}}
}

// TestRegionRegistrationLifecycle: a region registration is created once (a second create is a
// conflict), listed with its key ids beside the cluster registrations, refused when invalid
// naming the field, and revoked at its revision.
func TestRegionRegistrationLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	c := e.Client
	register := func(r *adminv1.RegionRegistration) (*adminv1.RegionRegistration, error) {
		resp, err := c.RegisterRegion(ctx, connect.NewRequest(&adminv1.RegisterRegionRequest{Registration: r}))
		if err != nil {
			return nil, err
		}
		return resp.Msg.GetRegistration(), nil
	}
	stored := wantCreatedOnce(t, register, testRegionRegistration)
	wantID := stored.GetKeyIds()[0]
	list, err := c.ListRegistrations(ctx, connect.NewRequest(&adminv1.ListRegistrationsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if got := list.Msg.GetRegions(); len(got) != 1 || got[0].GetRegion() != "eu-west-1" ||
		got[0].GetKeyIds()[0] != wantID {
		t.Fatalf("listed regions %v", got)
	}
	wantInvalid(t, register, func() *adminv1.RegionRegistration {
		r := testRegionRegistration()
		r.Revision = stored.GetRevision()
		return r
	}, []invalidEdit[*adminv1.RegionRegistration]{
		{"no key", "public_keys", func(r *adminv1.RegionRegistration) { r.PublicKeys = nil }},
		{"short key", "public_keys[0]", func(r *adminv1.RegionRegistration) { r.PublicKeys = [][]byte{{1, 2}} }},
		{"no region", "region", func(r *adminv1.RegionRegistration) { r.Region = "" }},
		{"bad region", "region", func(r *adminv1.RegionRegistration) { r.Region = "a b" }},
	})
	revoke := func(region string, rev int64) error {
		_, err := c.RevokeRegion(ctx, connect.NewRequest(&adminv1.RevokeRegionRequest{Region: region, Revision: rev}))
		return err
	}
	wantCode(t, revoke("eu-west-1", stored.GetRevision()+100), connect.CodeFailedPrecondition)
	if err := revoke("eu-west-1", stored.GetRevision()); err != nil {
		t.Fatal(err)
	}
	wantCode(t, revoke("eu-west-1", 0), connect.CodeNotFound)
	wantCode(t, revoke("bad/name", 0), connect.CodeInvalidArgument)
}
