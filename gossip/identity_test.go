package gossip_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// clusterKeys is a verifier that accepts a summary only when the key registered for its cluster
// signed it.
type clusterKeys map[string]ed25519.PublicKey

func (k clusterKeys) VerifySummary(s *gossipv1.CapacitySummary) error {
	pub, ok := k[s.GetCluster()]
	if !ok {
		return errors.New("cluster not registered")
	}
	return gossip.VerifySummary(s, pub)
}

// TestPoolStoresOnlyVerifiedSummaries runs a loopback pool: a router verifying summaries, the
// real gateway of c1 signing with c1's key, and an impostor claiming c1 with a key of its own.
// The router holds the real gateway's summaries (full and deltas) and never the impostor's.
func TestPoolStoresOnlyVerifiedSummaries(t *testing.T) {
	real, rogue := testSigningKey(10), testSigningKey(11)
	reg := prometheus.NewRegistry()
	p := gossiptest.Start(t, 3, func(i int, c *gossip.Config) {
		c.SummaryTTL = time.Hour
		c.Timings = gossiptest.RelaxedTimings()
		switch i {
		case 0:
			c.NodeName, c.Role, c.Cluster, c.AdvertiseURL = "router", gossip.RoleRouter, "", ""
			c.Verifier, c.Registerer = clusterKeys{"c1": real.Public().(ed25519.PublicKey)}, reg
		case 1:
			c.NodeName, c.Cluster, c.AdvertiseURL, c.SigningKey = "gw-c1", "c1", "https://gw-c1.test", real
		case 2:
			c.NodeName, c.Cluster, c.AdvertiseURL, c.SigningKey = "intruder", "c1", "http://intruder.test", rogue
		}
	})
	router := p.Node(0)
	poll.Until(
		t,
		20*time.Second,
		func() bool { return gossiptest.AllMembersAlive([]*gossip.Node{router}, 3) },
		"pool formed",
	)
	var last *gossipv1.CapacitySummary
	for i := range 5 {
		for _, n := range []int{1, 2} {
			out, err := p.Node(n).
				Publish(&gossipv1.CapacitySummary{Models: []*gossipv1.ModelCapacity{{Name: "llama", ReadyPods: 2, QueueDepth: uint32(i)}}})
			if err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				last = out
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	poll.Until(t, 20*time.Second, func() bool {
		for _, s := range router.Snapshot() {
			if s.Node == "gw-c1" && s.Summary.GetSequence() == last.GetSequence() {
				return true
			}
		}
		return false
	}, "the real gateway's last summary reaches the router")
	poll.Until(t, 20*time.Second, func() bool {
		return testutil.ToFloat64(rejectedCounter(t, reg, gossip.RejectVerifier)) >= 1
	}, "the impostor's summaries are counted as rejected")
	for _, s := range router.Snapshot() {
		if s.Node == "intruder" || s.Summary.GetGatewayUrl() != "https://gw-c1.test" {
			t.Fatalf("router stored %s's summary (url %s)", s.Node, s.Summary.GetGatewayUrl())
		}
	}
}

// rejectedCounter returns switchyard_gossip_summaries_rejected_total{reason} from reg.
func rejectedCounter(t *testing.T, reg *prometheus.Registry, reason string) prometheus.Counter {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
	for _, mf := range mfs {
		if mf.GetName() != "switchyard_gossip_summaries_rejected_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == reason {
				c.Add(m.GetCounter().GetValue())
			}
		}
	}
	return c
}

// TestLargePreAuthPushIsCut opens a TCP stream to a node's gossip port without any key and
// announces an encrypted message of 16 MiB: the node cuts the stream after its 5-byte header,
// without reading (let alone buffering) the payload, and keeps serving its pool.
func TestLargePreAuthPushIsCut(t *testing.T) {
	reg := prometheus.NewRegistry()
	p := gossiptest.Start(t, 1, func(_ int, c *gossip.Config) { c.MaxStreamBytes, c.Registerer = 1<<20, reg })
	n := p.Node(0)
	before := n.Stats().StreamBytesReceived
	conn, err := net.Dial("tcp", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const declared = 16 << 20
	header := binary.BigEndian.AppendUint32([]byte{10}, declared) // memberlist's encryptMsg
	_ = conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	written, werr := 0, error(nil)
	if _, werr = conn.Write(header); werr == nil {
		chunk := make([]byte, 64<<10)
		for written < declared {
			var k int
			k, werr = conn.Write(chunk)
			written += k
			if werr != nil {
				break
			}
		}
	}
	if werr == nil {
		t.Fatalf("the node accepted all %d bytes of an unauthenticated stream", written)
	}
	if got := n.Stats().StreamBytesReceived - before; got > 64<<10 {
		t.Fatalf("the node read %d bytes of the stream, want only its header", got)
	}
	poll.Until(t, 10*time.Second, func() bool {
		return testutil.ToFloat64(counterNamed(t, reg, "switchyard_gossip_streams_cut_total")) == 1
	}, "the cut stream is counted")

	// The node still serves its pool: a keyed node joins and push/pull works.
	c := gossiptest.Config(1)
	c.Seeds = []string{n.Addr()}
	p.Add(c)
	poll.Until(
		t,
		20*time.Second,
		func() bool { return gossiptest.AllMembersAlive([]*gossip.Node{n}, 2) },
		"a keyed node to join after the cut",
	)
	if strings.Contains(fmt.Sprint(werr), "timeout") {
		t.Fatalf("the writer timed out instead of being cut: %v", werr)
	}
}

// counterNamed returns the value of the unlabelled counter name in reg as a counter.
func counterNamed(t *testing.T, reg *prometheus.Registry, name string) prometheus.Counter {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				c.Add(m.GetCounter().GetValue())
			}
		}
	}
	return c
}

func TestSigningKeyFileWatcherFollowsTheFile(t *testing.T) {
	first, second := testSigningKey(20), testSigningKey(21)
	path := filepath.Join(t.TempDir(), "signing.key")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	seed := func(k ed25519.PrivateKey) string { return base64.StdEncoding.EncodeToString(k.Seed()) + "\n" }
	write(seed(first))
	key, err := gossip.LoadSigningKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := gossiptest.Start(t, 1, func(_ int, c *gossip.Config) { c.SigningKey = key })
	n := p.Node(0)
	if n.SigningKeyID() != gossip.KeyID(first.Public().(ed25519.PublicKey)) {
		t.Fatalf("start-up key id %q", n.SigningKeyID())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_ = gossip.SigningKeyFileWatcher{Node: n, Path: path, Interval: 20 * time.Millisecond}.Run(ctx)
	}()
	steps := []struct {
		name, content string
		want          ed25519.PrivateKey
	}{
		{"rotated", seed(second), second},
		{"a broken file keeps the key", "not a key", second},
		{"back to the first", seed(first), first},
	}
	for _, st := range steps {
		write(st.content)
		want := gossip.KeyID(st.want.Public().(ed25519.PublicKey))
		time.Sleep(100 * time.Millisecond)
		poll.UntilState(t, 10*time.Second, func() (bool, string) {
			id := n.SigningKeyID()
			return id == want, fmt.Sprintf("key id %q", id)
		}, fmt.Sprintf("%s: key id %q", st.name, want))
		out, err := n.Publish(&gossipv1.CapacitySummary{})
		if err != nil {
			t.Fatal(err)
		}
		if err := gossip.VerifySummary(out, st.want.Public().(ed25519.PublicKey)); err != nil {
			t.Fatalf("%s: published summary: %v", st.name, err)
		}
	}
}
