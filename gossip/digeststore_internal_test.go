package gossip

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

func storeDigest(seq, base uint64, clusters ...string) *gossipv1.RegionDigest {
	d := &gossipv1.RegionDigest{Region: "b", Origin: "agg-b", Sequence: seq, GeneratedAtUnixNano: int64(seq),
		BaseSequence: base}
	for _, c := range clusters {
		d.Clusters = append(d.Clusters, &gossipv1.DigestCluster{Cluster: c, GatewayUrls: []string{"http://" + c}})
	}
	return d
}

func clusterNames(d *gossipv1.RegionDigest) []string {
	var out []string
	for _, c := range d.GetClusters() {
		out = append(out, c.GetCluster())
	}
	return out
}

// TestDigestStoreMerge: full digests replace the state, deltas rebuild it on top of their full
// digest, a delta that comes before its full digest waits for it, and older messages change
// nothing.
func TestDigestStoreMerge(t *testing.T) {
	removing := storeDigest(30, 10, "c3")
	removing.Removed = []string{"c1"}
	tests := []struct {
		name     string
		msgs     []*gossipv1.RegionDigest
		outcomes []outcome
		wantSeq  uint64
		want     []string
	}{
		{"full", []*gossipv1.RegionDigest{storeDigest(10, 0, "c1", "c2")}, []outcome{chunkApplied}, 10,
			[]string{"c1", "c2"}},
		{"delta adds and removes", []*gossipv1.RegionDigest{storeDigest(10, 0, "c1", "c2"), removing},
			[]outcome{chunkApplied, chunkApplied}, 30, []string{"c2", "c3"}},
		{"deltas are cumulative", []*gossipv1.RegionDigest{storeDigest(10, 0, "c1"), storeDigest(20, 10, "c2"),
			storeDigest(30, 10, "c3")}, []outcome{chunkApplied, chunkApplied, chunkApplied}, 30, []string{"c1", "c3"}},
		{"older delta dropped", []*gossipv1.RegionDigest{storeDigest(10, 0, "c1"), storeDigest(30, 10, "c3"),
			storeDigest(20, 10, "c2")}, []outcome{chunkApplied, chunkApplied, chunkStale}, 30, []string{"c1", "c3"}},
		{"delta before its full digest", []*gossipv1.RegionDigest{storeDigest(30, 20, "c3"), storeDigest(20, 0, "c1")},
			[]outcome{chunkParked, chunkApplied}, 30, []string{"c1", "c3"}},
		{"delta against an older full", []*gossipv1.RegionDigest{storeDigest(20, 0, "c1"), storeDigest(30, 10, "c3")},
			[]outcome{chunkApplied, chunkStale}, 20, []string{"c1"}},
		{"newer full replaces", []*gossipv1.RegionDigest{storeDigest(10, 0, "c1"), storeDigest(15, 10, "c2"),
			storeDigest(20, 0, "c9")}, []outcome{chunkApplied, chunkApplied, chunkApplied}, 20, []string{"c9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newDigestStore(1 << 20)
			now := time.Unix(100, 0)
			for i, d := range tt.msgs {
				blob, err := EncodeDigest(d)
				if err != nil {
					t.Fatal(err)
				}
				c := chunk{node: d.GetOrigin(), seq: d.GetSequence(), count: 1, payload: blob, regional: true}
				out, _, err := s.addChunk(c, now)
				if err != nil || out != tt.outcomes[i] {
					t.Fatalf("message %d: outcome %v (err %v), want %v", i, out, err, tt.outcomes[i])
				}
			}
			all := s.all()
			if len(all) != 1 {
				t.Fatalf("%d states, want 1", len(all))
			}
			if got := all[0].current; got.GetSequence() != tt.wantSeq || !slices.Equal(clusterNames(got), tt.want) {
				t.Fatalf("state %d %v, want %d %v", got.GetSequence(), clusterNames(got), tt.wantSeq, tt.want)
			}
		})
	}
}

// TestDigestStoreRejects: a digest the check refuses is not stored, nor is a message whose
// chunk header names another origin or sequence than the digest.
func TestDigestStoreRejects(t *testing.T) {
	s := newDigestStore(1 << 20)
	s.accept = func(d *gossipv1.RegionDigest, _ time.Time) error {
		if d.GetRegion() == "forged" {
			return errors.New("bad key")
		}
		return nil
	}
	forged := storeDigest(10, 0, "c1")
	forged.Region = "forged"
	blob, _ := EncodeDigest(forged)
	if out, _, _ := s.addChunk(chunk{node: "agg-b", seq: 10, count: 1, payload: blob}, time.Now()); out != chunkRejected {
		t.Fatalf("forged digest: outcome %v, want rejected", out)
	}
	blob, _ = EncodeDigest(storeDigest(10, 0, "c1"))
	if _, _, err := s.addChunk(chunk{node: "agg-x", seq: 10, count: 1, payload: blob}, time.Now()); err == nil {
		t.Fatal("digest under another origin's chunk header accepted")
	}
	if len(s.all()) != 0 {
		t.Fatalf("store holds %d states, want none", len(s.all()))
	}
}

// TestStateCarriesDigests: push/pull state carries digest messages after the summaries, a
// reader of summaries only is unaffected, and a node merges the digests it receives so.
func TestStateCarriesDigests(t *testing.T) {
	full, _ := EncodeDigest(storeDigest(10, 0, "c1"))
	delta, _ := EncodeDigest(storeDigest(20, 10, "c2"))
	sum := &gossipv1.CapacitySummary{Node: "gw", Sequence: 5, Cluster: "c9", Region: "a"}
	st, err := encodeStateWith([]heldSummary{{summary: sum}}, [][]byte{full, delta})
	if err != nil {
		t.Fatal(err)
	}
	held, digests, err := decodeStateWith(st, 1<<20)
	if err != nil || len(held) != 1 || len(digests) != 2 {
		t.Fatalf("decoded %d summaries, %d digests, err %v", len(held), len(digests), err)
	}
	if only, err := decodeState(st, 1<<20); err != nil || len(only) != 1 {
		t.Fatalf("summaries only: %d, err %v", len(only), err)
	}
	cfg := DefaultLANConfig()
	cfg.NodeName, cfg.Role, cfg.Region, cfg.Insecure = "r", RoleRouter, "a", true
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	(&delegate{n: n}).MergeRemoteState(st, true)
	ds := n.Digests()
	if len(ds) != 1 || ds[0].Digest.GetSequence() != 20 ||
		!slices.Equal(clusterNames(ds[0].Digest), []string{"c1", "c2"}) {
		t.Fatalf("digests after push/pull: %+v", ds)
	}
	if blobs := n.digestBlobs(); len(blobs) != 2 {
		t.Fatalf("the node hands on %d digest messages, want the full digest and its delta", len(blobs))
	}
}

// TestDigestFromTheFuture: a digest whose sequence is beyond the allowed clock skew (it would
// hold back the aggregator's real digests, newest sequence winning) is refused and counted.
func TestDigestFromTheFuture(t *testing.T) {
	cfg := DefaultLANConfig()
	cfg.NodeName, cfg.Role, cfg.Region, cfg.Insecure = "r", RoleRouter, "a", true
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	future := uint64(time.Now().Add(time.Hour).UnixNano())
	blob, _ := EncodeDigest(storeDigest(future, 0, "c1"))
	if _, err := n.RelayDigest(blob); !errors.Is(err, ErrFuture) {
		t.Fatalf("RelayDigest: %v, want ErrFuture", err)
	}
	msgs, err := encodeParts(msgDigest, "agg-b", future, blob, 1336, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		n.handleDigestChunk(m)
	}
	if len(n.Digests()) != 0 {
		t.Fatalf("digest from the future stored: %v", n.Digests())
	}
	if got := testutil.ToFloat64(n.metrics.digests.WithLabelValues("clock_skew")); got != 2 {
		t.Fatalf("clock_skew counted %v times, want 2", got)
	}
}
