package app_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/app"
	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
)

// TestSummariesSignedWithTheKeyFile: a gateway given --summary-signing-key-file publishes
// summaries its public key verifies, as a router sees them over gossip.
func TestSummariesSignedWithTheKeyFile(t *testing.T) {
	dir := t.TempDir()
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyFile, gossipKeyFile := filepath.Join(dir, "signing.pem"), filepath.Join(dir, "gossip.key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(
		gossipKeyFile,
		[]byte(base64.StdEncoding.EncodeToString(gossiptest.TestKey)+"\n"),
		0o600,
	); err != nil {
		t.Fatal(err)
	}
	router := gossiptest.Start(t, 1, func(_ int, c *gossip.Config) {
		c.NodeName, c.Role, c.Cluster, c.AdvertiseURL = "router", gossip.RoleRouter, "", ""
	})
	startGateway(t, 1, "--gossip-bind=127.0.0.1:0", "--gossip-join="+router.Seed(), "--gossip-key-file="+gossipKeyFile,
		"--advertise-url=https://gw.c1.test:8443", "--summary-signing-key-file="+keyFile)
	pub := key.Public().(ed25519.PublicKey)
	poll.Until(t, waitTimeout, func() bool {
		for _, s := range router.Node(0).Snapshot() {
			if s.Cluster == "c1" && s.Summary.GetSigningKeyId() == gossip.KeyID(pub) &&
				gossip.VerifySummary(s.Summary, pub) == nil {
				return true
			}
		}
		return false
	}, "a signed summary reaches the router")
}

func TestSigningKeyFileFlag(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.key")
	if err := os.WriteFile(bad, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--cluster=c", "--region=r", "--endpoints=127.0.0.1:8001"}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"without gossip", append(base, "--summary-signing-key-file="+bad), "--gossip-bind"},
		{
			"unreadable",
			append(base, "--gossip-bind=127.0.0.1:0", "--summary-signing-key-file="+filepath.Join(dir, "missing")),
			"--summary-signing-key-file",
		},
		{
			"not a key",
			append(base, "--gossip-bind=127.0.0.1:0", "--summary-signing-key-file="+bad),
			"--summary-signing-key-file",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := app.ParseConfig(tt.args, func(string) string { return "" }, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want mention of %s", err, tt.wantErr)
			}
		})
	}
}
