package ctl_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"

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
