package ctl_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/gossip"
)

func TestRegisterAndRevokeRegion(t *testing.T) {
	f := newFixture(t)
	pub, _, _ := ed25519.GenerateKey(nil)
	keyFile := writeFile(t, "region.pub", base64.StdEncoding.EncodeToString(pub)+"\n")
	out := f.run(t, "register-region", "eu-west-1", "--public-key-file="+keyFile)
	if !strings.Contains(out, "region eu-west-1 registered") || !strings.Contains(out, gossip.KeyID(pub)) {
		t.Fatalf("register-region:\n%s", out)
	}
	table := f.run(t, "registrations")
	if !strings.Contains(table, "REGION") || !strings.Contains(table, "eu-west-1") ||
		!strings.Contains(table, gossip.KeyID(pub)) {
		t.Fatalf("registrations table:\n%s", table)
	}
	if out := f.run(t, "revoke-region", "eu-west-1"); !strings.Contains(out, "region eu-west-1 registration revoked") {
		t.Fatalf("revoke-region:\n%s", out)
	}
	if table := f.run(t, "registrations"); strings.Contains(table, "eu-west-1") {
		t.Fatalf("revoked region still listed:\n%s", table)
	}
}

// TestRegisterRegionReplace checks register-region --replace: it creates the registration, leaves
// an identical one alone (no new revision), writes new keys over the stored revision, and refuses
// --revision beside it.
func TestRegisterRegionReplace(t *testing.T) {
	f := newFixture(t)
	pubA, _, _ := ed25519.GenerateKey(nil)
	pubB, _, _ := ed25519.GenerateKey(nil)
	fileA := writeFile(t, "a.pub", base64.StdEncoding.EncodeToString(pubA))
	fileB := writeFile(t, "b.pub", base64.StdEncoding.EncodeToString(pubB))
	register := func(t *testing.T, file string) *adminv1.RegionRegistration {
		t.Helper()
		out := f.run(t, "register-region", "eu-west-1", "--replace", "--public-key-file="+file, "-o", "json")
		var resp adminv1.RegisterRegionResponse
		if err := protojson.Unmarshal([]byte(out), &resp); err != nil {
			t.Fatalf("-o json: %v\n%s", err, out)
		}
		return resp.GetRegistration()
	}
	created := register(t, fileA)
	if created.GetRevision() == 0 || len(created.GetKeyIds()) != 1 || created.GetKeyIds()[0] != gossip.KeyID(pubA) {
		t.Fatalf("created = %v", created)
	}
	if same := register(t, fileA); same.GetRevision() != created.GetRevision() {
		t.Fatalf("an identical registration was written again: revision %d, then %d",
			created.GetRevision(), same.GetRevision())
	}
	if out := f.run(t, "register-region", "eu-west-1", "--replace", "--public-key-file="+fileA); !strings.Contains(
		out, "unchanged") {
		t.Errorf("table output for an identical registration: %q", out)
	}
	changed := register(t, fileB)
	if changed.GetRevision() <= created.GetRevision() || len(changed.GetKeyIds()) != 1 ||
		changed.GetKeyIds()[0] != gossip.KeyID(pubB) {
		t.Fatalf("changed = %v", changed)
	}
	res := ctlRun(f.addr, f.tokenFile, "register-region", "eu-west-1", "--public-key-file="+fileB, "--replace",
		"--revision=1")
	if res.code != 2 || !strings.Contains(res.stderr, "--replace") {
		t.Errorf("--replace with --revision: exit %d, stderr %q", res.code, res.stderr)
	}
}
