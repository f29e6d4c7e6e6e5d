package ctl_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/gossip"
)

func TestRegisterAndRevokeCluster(t *testing.T) {
	f := newFixture(t)
	pubA, _, _ := ed25519.GenerateKey(nil)
	pubB, _, _ := ed25519.GenerateKey(nil)
	der, err := x509.MarshalPKIXPublicKey(pubA)
	if err != nil {
		t.Fatal(err)
	}
	pemFile := writeFile(t, "a.pub", string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
	rawFile := writeFile(t, "b.pub", base64.StdEncoding.EncodeToString(pubB)+"\n")

	out := f.run(
		t,
		"register-cluster",
		"c1",
		"--region=us-east-1",
		"--gateway-urls=https://gw-a.c1.test,https://gw-b.c1.test",
		"--public-key-file="+pemFile+","+rawFile,
		"--models=llama",
		"-o",
		"json",
	)
	var stored adminv1.RegisterClusterResponse
	if err := protojson.Unmarshal([]byte(out), &stored); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	r := stored.GetRegistration()
	if r.GetRevision() == 0 || len(r.GetKeyIds()) != 2 || r.GetKeyIds()[0] != gossip.KeyID(pubA) ||
		r.GetKeyIds()[1] != gossip.KeyID(pubB) {
		t.Fatalf("registered = %v", r)
	}

	list := f.run(t, "registrations", "-o", "json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(list), &doc); err != nil {
		t.Fatal(err)
	}
	regs, _ := doc["registrations"].([]any)
	if len(regs) != 1 || doc["identity_mode"] == nil {
		t.Fatalf("registrations JSON:\n%s", list)
	}
	for _, field := range []string{"cluster", "region", "gateway_urls", "models", "public_keys", "revision", "key_ids"} {
		if _, ok := regs[0].(map[string]any)[field]; !ok {
			t.Errorf("registration JSON lacks %q: %v", field, regs[0])
		}
	}
	table := f.run(t, "registrations")
	if !strings.Contains(table, "c1") || !strings.Contains(table, gossip.KeyID(pubA)) ||
		!strings.Contains(table, "identity mode:") {
		t.Fatalf("registrations table:\n%s", table)
	}

	// A second create conflicts; an update names the revision read.
	base := []string{
		f.addr,
		f.tokenFile,
		"register-cluster",
		"c1",
		"--region=us-east-1",
		"--gateway-urls=https://gw-a.c1.test",
		"--public-key-file=" + rawFile,
	}
	if res := ctlRun(base...); res.code != 1 || !strings.Contains(res.stderr, "FAILED_PRECONDITION") {
		t.Fatalf("second create: exit %d, stderr %q", res.code, res.stderr)
	}
	f.run(t, append(base[2:], "--revision="+jsonNumber(r.GetRevision()))...)

	bad := []struct {
		name string
		args []string
		code int
		want string
	}{
		{
			"cleartext url",
			[]string{"register-cluster", "c2", "--region=r", "--gateway-urls=http://gw.test", "--public-key-file=" + rawFile},
			1,
			"INVALID_ARGUMENT",
		},
		{
			"missing region",
			[]string{"register-cluster", "c2", "--gateway-urls=https://gw.test", "--public-key-file=" + rawFile},
			2,
			"--region",
		},
		{
			"missing key",
			[]string{"register-cluster", "c2", "--region=r", "--gateway-urls=https://gw.test"},
			2,
			"--public-key-file",
		},
		{
			"unreadable key",
			[]string{
				"register-cluster",
				"c2",
				"--region=r",
				"--gateway-urls=https://gw.test",
				"--public-key-file=" + writeFile(t, "x", "junk"),
			},
			2,
			"--public-key-file",
		},
		{"revoke without cluster", []string{"revoke-cluster"}, 2, "CLUSTER"},
		{"flag of another command", []string{"revoke-cluster", "c1", "--region=r"}, 2, "--region"},
	}
	for _, b := range bad {
		res := ctlRun(append([]string{f.addr, f.tokenFile}, b.args...)...)
		if res.code != b.code || !strings.Contains(res.stderr, b.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d mentioning %s", b.name, res.code, res.stderr, b.code, b.want)
		}
	}

	if out := f.run(t, "revoke-cluster", "c1"); !strings.Contains(out, "revoked") {
		t.Fatalf("revoke output %q", out)
	}
	if res := ctlRun(
		f.addr,
		f.tokenFile,
		"revoke-cluster",
		"c1",
	); res.code != 1 ||
		!strings.Contains(res.stderr, "NOT_FOUND") {
		t.Fatalf("second revoke: exit %d, stderr %q", res.code, res.stderr)
	}
}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestRegisterClusterReplace checks --replace: it creates a registration, leaves an identical one
// alone (no new revision, in any order), writes a changed one over the stored revision, and
// refuses --revision beside it.
func TestRegisterClusterReplace(t *testing.T) {
	f := newFixture(t)
	pubA, _, _ := ed25519.GenerateKey(nil)
	pubB, _, _ := ed25519.GenerateKey(nil)
	fileA := writeFile(t, "a.pub", base64.StdEncoding.EncodeToString(pubA))
	fileB := writeFile(t, "b.pub", base64.StdEncoding.EncodeToString(pubB))
	register := func(t *testing.T, args ...string) *adminv1.ClusterRegistration {
		t.Helper()
		out := f.run(
			t,
			append([]string{"register-cluster", "c-replace", "--region=us-east-1", "--replace", "-o", "json"}, args...)...)
		var resp adminv1.RegisterClusterResponse
		if err := protojson.Unmarshal([]byte(out), &resp); err != nil {
			t.Fatalf("-o json: %v\n%s", err, out)
		}
		return resp.GetRegistration()
	}
	created := register(t, "--gateway-urls=https://gw-a.test,https://gw-b.test", "--public-key-file="+fileA+","+fileB)
	if created.GetRevision() == 0 || len(created.GetKeyIds()) != 2 {
		t.Fatalf("created = %v", created)
	}
	same := register(t, "--gateway-urls=https://gw-b.test,https://gw-a.test", "--public-key-file="+fileB+","+fileA)
	if same.GetRevision() != created.GetRevision() {
		t.Fatalf(
			"an identical registration was written again: revision %d, then %d",
			created.GetRevision(),
			same.GetRevision(),
		)
	}
	table := f.run(t, "register-cluster", "c-replace", "--region=us-east-1", "--replace",
		"--gateway-urls=https://gw-a.test,https://gw-b.test", "--public-key-file="+fileA+","+fileB)
	if !strings.Contains(table, "unchanged") {
		t.Errorf("table output for an identical registration: %q", table)
	}
	changed := register(t, "--gateway-urls=https://gw-a.test", "--public-key-file="+fileB, "--models=llama")
	if changed.GetRevision() <= created.GetRevision() || len(changed.GetKeyIds()) != 1 ||
		changed.GetKeyIds()[0] != gossip.KeyID(pubB) ||
		len(changed.GetGatewayUrls()) != 1 ||
		len(changed.GetModels()) != 1 {
		t.Fatalf("changed = %v", changed)
	}
	res := ctlRun(
		f.addr,
		f.tokenFile,
		"register-cluster",
		"c-replace",
		"--region=us-east-1",
		"--gateway-urls=https://gw-a.test",
		"--public-key-file="+fileB,
		"--replace",
		"--revision=1",
	)
	if res.code != 2 || !strings.Contains(res.stderr, "--replace") {
		t.Errorf("--replace with --revision: exit %d, stderr %q", res.code, res.stderr)
	}
}
