package gossip

import (
	"crypto/ed25519"
	"errors"
	"io"
	"math"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// keyVerifier accepts summaries its key verifies; with reject set it refuses everything.
type keyVerifier struct {
	pub    atomic.Pointer[ed25519.PublicKey]
	reject atomic.Bool
	calls  atomic.Int64
}

func (v *keyVerifier) VerifySummary(s *gossipv1.CapacitySummary) error {
	v.calls.Add(1)
	if v.reject.Load() {
		return errors.New("refused")
	}
	if p := v.pub.Load(); p != nil {
		return VerifySummary(s, *p)
	}
	return nil
}

func testKey(b byte) ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = b
	}
	return ed25519.NewKeyFromSeed(seed)
}

// newIdentityNode returns an unstarted node on clock: a gateway "gw" of c1 signing with key, or
// a router verifying with v.
func newIdentityNode(
	t *testing.T,
	clock *fakeClock,
	key ed25519.PrivateKey,
	v SummaryVerifier,
	reg prometheus.Registerer,
) *Node {
	t.Helper()
	cfg := DefaultLANConfig()
	cfg.Insecure, cfg.Region, cfg.Now, cfg.Registerer = true, "r1", clock.Now, reg
	cfg.FullSummaryInterval = time.Minute
	if key != nil {
		cfg.NodeName, cfg.Role, cfg.Cluster, cfg.AdvertiseURL, cfg.SigningKey =
			"gw", RoleGateway, "c1", "https://gw.test", key
	} else {
		cfg.NodeName, cfg.Role, cfg.Verifier = "router", RoleRouter, v
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// relayQueued hands every chunk queued at from to the node to, as gossip would.
func relayQueued(from, to *Node) {
	for _, q := range [][][]byte{from.queue.GetBroadcasts(0, 1<<20), from.beatQueue.GetBroadcasts(0, 1<<20),
		from.deltaQueue.GetBroadcasts(0, 1<<20)} {
		for _, m := range q {
			if isChunk(m[0]) {
				to.handleChunk(m)
			}
		}
	}
}

func TestSignedSummariesVerifyThroughDeltas(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	key, next := testKey(1), testKey(2)
	v := &keyVerifier{}
	pub := key.Public().(ed25519.PublicKey)
	v.pub.Store(&pub)
	gw := newIdentityNode(t, clock, key, nil, nil)
	router := newIdentityNode(t, clock, nil, v, nil)
	cur := deltaBase(1, 4, 3)
	cur.Node, cur.Sequence, cur.GeneratedAtUnixNano = "", 0, 0
	steps := []struct {
		name   string
		change func(s *gossipv1.CapacitySummary)
		rotate bool
		full   bool
	}{
		{"first", nil, false, true},
		{"figures", func(s *gossipv1.CapacitySummary) { s.Models[0].QueueDepth++ }, false, false},
		{"adapter figures", func(s *gossipv1.CapacitySummary) { s.Models[1].Adapters[0].Running++ }, false, false},
		{"nothing changed", nil, false, false},
		{"new key", func(s *gossipv1.CapacitySummary) { s.Models[0].QueueDepth++ }, true, true},
		{"figures under the new key", func(s *gossipv1.CapacitySummary) { s.Models[2].FreeKvTokens += 100 }, false, false},
	}
	for _, st := range steps {
		clock.Advance(250 * time.Millisecond)
		if st.change != nil {
			st.change(cur)
		}
		if st.rotate {
			if err := gw.SetSigningKey(next); err != nil {
				t.Fatal(err)
			}
			p := next.Public().(ed25519.PublicKey)
			v.pub.Store(&p)
		}
		out, err := gw.Publish(cur)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if gotFull := gw.pub.base == out; gotFull != st.full {
			t.Errorf("%s: full = %v, want %v", st.name, gotFull, st.full)
		}
		if out.GetSigningKeyId() != gw.SigningKeyID() || len(out.GetSignature()) != ed25519.SignatureSize {
			t.Fatalf("%s: published summary not signed: key id %q", st.name, out.GetSigningKeyId())
		}
		relayQueued(gw, router)
		got := router.store.entriesCopy()["gw"].summary
		if !proto.Equal(got, out) {
			t.Fatalf(
				"%s: router holds a different summary (sequence %d, want %d)",
				st.name,
				got.GetSequence(),
				out.GetSequence(),
			)
		}
		if err := VerifySummary(got, *v.pub.Load()); err != nil {
			t.Fatalf("%s: rebuilt summary: %v", st.name, err)
		}
	}
}

func TestForgedSequencesAreDropped(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	reg := prometheus.NewRegistry()
	router := newIdentityNode(t, clock, nil, nil, reg)
	now := uint64(clock.Now().UnixNano())
	summary := func(node string, seq uint64) *gossipv1.CapacitySummary {
		return &gossipv1.CapacitySummary{
			Node:                node,
			Cluster:             "c1",
			Sequence:            seq,
			GeneratedAtUnixNano: int64(min(seq, math.MaxInt64)),
		}
	}
	chunkOf := func(s *gossipv1.CapacitySummary) []byte {
		blob, err := EncodeSummary(s)
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := encodeChunks(s.GetNode(), s.GetSequence(), blob, 1400)
		if err != nil {
			t.Fatal(err)
		}
		return msgs[0]
	}
	state := func(s *gossipv1.CapacitySummary) []byte {
		b, err := encodeState([]heldSummary{{summary: s}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	d := &delegate{n: router}
	tests := []struct {
		name    string
		deliver func()
	}{
		{"maximum sequence", func() { router.handleChunk(chunkOf(summary("gw", math.MaxUint64))) }},
		{"just beyond the skew", func() { router.handleChunk(chunkOf(summary("gw", now+uint64(31*time.Second)))) }},
		{"generated in the future", func() {
			s := summary("gw", uint64(clock.Now().UnixNano())+1)
			s.GeneratedAtUnixNano = int64(now + uint64(time.Hour))
			router.handleChunk(chunkOf(s))
		}},
		{"by push/pull", func() { d.MergeRemoteState(state(summary("gw", math.MaxUint64)), false) }},
		{"for our own name", func() { router.handleChunk(chunkOf(summary("router", math.MaxUint64))) }},
		{"our own name by push/pull", func() { d.MergeRemoteState(state(summary("router", math.MaxUint64)), false) }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			queued := router.queue.NumQueued()
			tt.deliver()
			if got := testutil.ToFloat64(router.metrics.rejected.WithLabelValues(RejectClockSkew)); got != float64(i+1) {
				t.Errorf("rejected{clock_skew} = %v, want %d", got, i+1)
			}
			if router.queue.NumQueued() != queued {
				t.Error("a forged chunk was queued for relay")
			}
			// The real publisher's next summary still applies, and our own sequencer did not jump.
			clock.Advance(time.Millisecond)
			seq := uint64(clock.Now().UnixNano())
			router.handleChunk(chunkOf(summary("gw", seq)))
			if got := router.store.newest("gw"); got != seq {
				t.Fatalf("newest gw sequence = %d, want the real %d", got, seq)
			}
			if next := router.seq.next(uint64(clock.Now().UnixNano())); next > seq+uint64(time.Second) {
				t.Fatalf("own sequencer advanced to %d", next)
			}
		})
	}
	// Within the skew a publisher's clock may run ahead.
	ahead := now + uint64(20*time.Second)
	router.handleChunk(chunkOf(summary("gw-ahead", ahead)))
	if got := router.store.newest("gw-ahead"); got != ahead {
		t.Fatalf("summary 20 s ahead: newest = %d, want %d", got, ahead)
	}
}

func TestVerifierRejectionKeepsThePreviousSummary(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	key := testKey(7)
	pub := key.Public().(ed25519.PublicKey)
	v := &keyVerifier{}
	v.pub.Store(&pub)
	reg := prometheus.NewRegistry()
	gw := newIdentityNode(t, clock, key, nil, nil)
	router := newIdentityNode(t, clock, nil, v, reg)
	good, err := gw.Publish(deltaBase(1, 2, 1))
	if err != nil {
		t.Fatal(err)
	}
	relayQueued(gw, router)
	if router.store.newest("gw") != good.GetSequence() {
		t.Fatal("signed summary not stored")
	}

	// An impostor under the same node name, unsigned, newer: refused, not relayed.
	clock.Advance(time.Second)
	forged := proto.CloneOf(good)
	forged.Sequence, forged.GatewayUrl, forged.Signature = good.GetSequence()+uint64(
		time.Second,
	), "http://intruder.test", nil
	blob, _ := EncodeSummary(forged)
	msgs, _ := encodeChunks("gw", forged.GetSequence(), blob, 1400)
	queued := router.queue.NumQueued()
	router.handleChunk(msgs[0])
	if got := router.store.entriesCopy()["gw"].summary; got.GetGatewayUrl() != good.GetGatewayUrl() {
		t.Fatalf("forged summary stored: %v", got.GetGatewayUrl())
	}
	if router.queue.NumQueued() != queued {
		t.Error("rejected summary queued for relay")
	}
	if got := testutil.ToFloat64(router.metrics.rejected.WithLabelValues(RejectVerifier)); got != 1 {
		t.Errorf("rejected{verifier} = %v, want 1", got)
	}

	// The verifier's rules change: Revalidate forgets what they no longer accept.
	if dropped := router.Revalidate(); len(dropped) != 0 {
		t.Fatalf("Revalidate dropped %v with the rules unchanged", dropped)
	}
	v.reject.Store(true)
	if dropped := router.Revalidate(); len(dropped) != 1 || dropped[0] != "gw" {
		t.Fatalf("Revalidate dropped %v, want [gw]", dropped)
	}
	if len(router.Snapshot()) != 0 {
		t.Fatal("summary still listed after Revalidate")
	}
}

func TestStreamGuard(t *testing.T) {
	const limit = 1 << 10
	header := func(kind byte, declared uint32) []byte {
		return []byte{kind, byte(declared >> 24), byte(declared >> 16), byte(declared >> 8), byte(declared)}
	}
	tests := []struct {
		name     string
		send     []byte
		wantRead int  // bytes the reader gets before the error
		wantCut  bool // the stream was cut
	}{
		{"encrypted within the limit", append(header(encryptMsgType, 1000), make([]byte, 1000)...), 1005, false},
		{
			"encrypted header declaring too much",
			append(header(encryptMsgType, 1<<24), make([]byte, 4096)...),
			streamHeaderLen,
			true,
		},
		{"unencrypted within the limit", append([]byte{0}, make([]byte, 500)...), 501, false},
		{"unencrypted beyond the limit", make([]byte, 4096), limit, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server, client := net.Pipe()
			m, err := newMetrics(prometheus.NewRegistry(), "gossip", func() float64 { return 0 })
			if err != nil {
				t.Fatal(err)
			}
			g := streamLimits{maxBytes: limit, timeout: 5 * time.Second}.guard(server, m)
			sent := make(chan int, 1)
			go func() {
				n, _ := client.Write(tt.send)
				_ = client.Close()
				sent <- n
			}()
			// memberlist reads through a 4 KiB bufio.Reader.
			got, err := io.ReadAll(&chunkReader{r: g, size: 4096})
			if len(got) != tt.wantRead {
				t.Errorf("read %d bytes, want %d (err %v)", len(got), tt.wantRead, err)
			}
			if cut := testutil.ToFloat64(m.streamsCut) == 1; cut != tt.wantCut {
				t.Errorf("cut = %v, want %v (err %v)", cut, tt.wantCut, err)
			}
			if tt.wantCut && !errors.Is(err, ErrStreamTooLarge) {
				t.Errorf("err = %v, want ErrStreamTooLarge", err)
			}
			if n := <-sent; tt.wantCut && n >= len(tt.send) {
				t.Errorf("the sender wrote all %d bytes of a cut stream", n)
			}
		})
	}
}

// chunkReader reads from r with buffers of size bytes.
type chunkReader struct {
	r    io.Reader
	size int
}

func (c *chunkReader) Read(b []byte) (int, error) {
	return c.r.Read(b[:min(len(b), c.size)])
}

// TestPartialForgeryDoesNotHoldBackSummaries: a forged first chunk of a two-chunk summary under
// the real node's name, with a sequence within the clock skew, does not make the node's next
// (single-chunk) summaries and deltas look stale while it waits for a second chunk that never
// comes.
func TestPartialForgeryDoesNotHoldBackSummaries(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	key := testKey(8)
	pub := key.Public().(ed25519.PublicKey)
	v := &keyVerifier{}
	v.pub.Store(&pub)
	gw := newIdentityNode(t, clock, key, nil, nil)
	router := newIdentityNode(t, clock, nil, v, nil)
	ahead := uint64(clock.Now().Add(20 * time.Second).UnixNano())
	for _, kind := range []byte{msgChunk, msgDelta} {
		forged, err := encodeParts(kind, "gw", ahead, make([]byte, 3000), 1400, false)
		if err != nil || len(forged) < 2 {
			t.Fatalf("forged parts: %d, %v", len(forged), err)
		}
		router.handleChunk(forged[0])
	}
	cur := deltaBase(1, 2, 1)
	cur.Node, cur.Sequence, cur.GeneratedAtUnixNano = "", 0, 0
	for i := range 3 {
		clock.Advance(250 * time.Millisecond)
		cur.Models[0].QueueDepth++
		out, err := gw.Publish(cur)
		if err != nil {
			t.Fatal(err)
		}
		relayQueued(gw, router)
		if got := router.store.newest("gw"); got != out.GetSequence() {
			t.Fatalf(
				"summary %d: router holds sequence %d, want %d (held back by the forged assembly)",
				i,
				got,
				out.GetSequence(),
			)
		}
	}
}
