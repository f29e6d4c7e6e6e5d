package admin_test

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"connectrpc.com/connect"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/gossip"
)

func testRegionRegistration() *adminv1.RegionRegistration {
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = 8
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	return &adminv1.RegionRegistration{Region: "eu-west-1", PublicKeys: [][]byte{pub}}
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
	stored, err := register(testRegionRegistration())
	if err != nil {
		t.Fatal(err)
	}
	wantID := gossip.KeyID(testRegionRegistration().GetPublicKeys()[0])
	if stored.GetRevision() == 0 || len(stored.GetKeyIds()) != 1 || stored.GetKeyIds()[0] != wantID {
		t.Fatalf("stored = %v, want a revision and key id %s", stored, wantID)
	}
	_, err = register(testRegionRegistration())
	wantCode(t, err, connect.CodeFailedPrecondition)
	list, err := c.ListRegistrations(ctx, connect.NewRequest(&adminv1.ListRegistrationsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if got := list.Msg.GetRegions(); len(got) != 1 || got[0].GetRegion() != "eu-west-1" ||
		got[0].GetKeyIds()[0] != wantID {
		t.Fatalf("listed regions %v", got)
	}
	for _, b := range []struct {
		name, field string
		edit        func(r *adminv1.RegionRegistration)
	}{
		{"no key", "public_keys", func(r *adminv1.RegionRegistration) { r.PublicKeys = nil }},
		{"short key", "public_keys[0]", func(r *adminv1.RegionRegistration) { r.PublicKeys = [][]byte{{1, 2}} }},
		{"no region", "region", func(r *adminv1.RegionRegistration) { r.Region = "" }},
		{"bad region", "region", func(r *adminv1.RegionRegistration) { r.Region = "a b" }},
	} {
		r := testRegionRegistration()
		r.Revision = stored.GetRevision()
		b.edit(r)
		_, err := register(r)
		wantCode(t, err, connect.CodeInvalidArgument)
		if !strings.Contains(err.Error(), b.field) {
			t.Errorf("%s: error %q does not name %s", b.name, err, b.field)
		}
	}
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
