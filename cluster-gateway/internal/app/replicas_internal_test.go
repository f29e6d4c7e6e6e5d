package app

import (
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/contract/poll"
)

// Every replica publishes the cluster's capacity summary, and a router keeps the newest one: its
// prefix sketch must therefore cover the prefixes every replica routed, not only its own. A
// prefix route one replica makes reaches the other's recent prefixes, which its summary's sketch
// is built from.
func TestPeerRoutesReachTheSummarySketch(t *testing.T) {
	const pod = "127.0.0.1:1" // never scraped: its models are set below
	keyFile := filepath.Join(t.TempDir(), "gossip.key")
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(make([]byte, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func(join string) *Gateway {
		args := []string{"--cluster=c1", "--region=r1", "--listen=127.0.0.1:0", "--ext-proc-listen=",
			"--metrics-listen=127.0.0.1:0", "--grpc-health-port=0", "--endpoints=" + pod,
			"--gossip-bind=127.0.0.1:0", "--gossip-key-file=" + keyFile,
			"--replica-bind=127.0.0.1:0", "--replica-interval=20ms"}
		if join != "" {
			args = append(args, "--replica-join="+join)
		}
		cfg, err := ParseConfig(args, func(string) string { return "" }, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		g, err := New(cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Error("gateway did not stop")
			}
		})
		poll.Until(t, 10*time.Second, func() bool { return g.store.Get(pod) != nil }, "the pod is listed")
		g.store.Get(pod).SetModels(&datastore.Models{Base: "llama"})
		return g
	}
	a := start("")
	b := start(a.ReplicaAddr())
	poll.Until(t, 10*time.Second, func() bool { return a.replicas.Peers() == 1 && b.replicas.Peers() == 1 },
		"the replicas see each other")
	hashes := []uint64{11, 12, 13}
	a.replicas.Routed("llama", pod, hashes)
	poll.Until(t, 10*time.Second, func() bool {
		hot := b.recent.HotPrefixes("llama", 100)
		return !slices.ContainsFunc(hashes, func(h uint64) bool { return !slices.Contains(hot, h) })
	}, "b's recent prefixes hold a's route")
}
