package gossip

import (
	"crypto/ed25519"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"
)

// linkedMsg encodes a linked chunk with the given header fields, as a forger would.
func linkedMsg(node string, seq uint64, index, count int, head, link digest, payload []byte) []byte {
	m := []byte{msgLinked}
	m = binary.AppendUvarint(m, uint64(len(node)))
	m = append(m, node...)
	m = binary.AppendUvarint(m, seq)
	m = binary.AppendUvarint(m, uint64(index))
	m = binary.AppendUvarint(m, uint64(count))
	m = append(m, head[:]...)
	m = append(m, link[:]...)
	return append(m, payload...)
}

// tampered returns msg, a linked chunk, with its payload's last byte changed.
func tampered(t *testing.T, msg []byte) []byte {
	t.Helper()
	c, err := decodeChunk(msg)
	if err != nil || !c.linked {
		t.Fatalf("not a linked chunk: %v", err)
	}
	p := append([]byte(nil), c.payload...)
	p[len(p)-1] ^= 0xff
	return linkedMsg(c.node, c.seq, c.index, c.count, c.head, c.link, p)
}

// TestForgedChunksCannotBlockMultiChunkSummaries: a node holding the gossip key but not the
// cluster's signing key sends chunks under the real gateway's name: of a message of its own
// (another sequence, another count, or a one-chunk message), or pieces claiming to belong to the
// gateway's message. None of them keeps the router from assembling and applying the genuine
// multi-chunk summary, and a piece that contradicts a chunk already checked is dropped, counted
// and not relayed.
func TestForgedChunksCannotBlockMultiChunkSummaries(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	key := testKey(3)
	pub := key.Public().(ed25519.PublicKey)
	gw := newIdentityNode(t, clock, key, nil, nil)
	cur := bigSummary("", 0, 40)
	cur.Sequence, cur.GeneratedAtUnixNano = 0, 0
	cur.PrefixSketch.Bits = make([]byte, 4000) // incompressible: the summary needs several chunks
	r := rand.New(rand.NewPCG(1, 2))
	for i := range cur.PrefixSketch.Bits {
		cur.PrefixSketch.Bits[i] = byte(r.Uint32())
	}
	cur.PrefixSketch.NumBits = 4000 * 8
	out, err := gw.Publish(cur)
	if err != nil {
		t.Fatal(err)
	}
	genuine := gw.queue.GetBroadcasts(0, 1<<20)
	byIndex := make([][]byte, len(genuine))
	for _, m := range genuine {
		c, err := decodeChunk(m)
		if err != nil || !c.linked || c.node != "gw" {
			t.Fatalf("published chunk: %+v, %v", c, err)
		}
		byIndex[c.index] = m
	}
	if len(byIndex) < 3 {
		t.Fatalf("summary in %d chunks, want 3 or more", len(byIndex))
	}
	first, _ := decodeChunk(byIndex[0])
	seq := out.GetSequence()
	ahead := seq + uint64(time.Second)

	// Messages of the forger's own making.
	ownMessage := func(kind byte, seq uint64, blob []byte) [][]byte {
		msgs, err := encodeParts(kind, "gw", seq, blob, 1336, true)
		if err != nil {
			t.Fatal(err)
		}
		return msgs
	}
	garbage := make([]byte, 3000)
	forgedSingle := func() []byte {
		s := proto.CloneOf(out)
		s.Sequence, s.GatewayUrl = ahead, "https://intruder.test"
		blob, _ := EncodeSummary(s)
		msgs, _ := encodeChunks("gw", ahead, blob, 1<<20)
		return msgs[0]
	}()

	in := func(order ...int) [][]byte {
		out := make([][]byte, len(order))
		for i, k := range order {
			out[i] = byIndex[k]
		}
		return out
	}
	all := func() [][]byte {
		order := make([]int, len(byIndex))
		for i := range order {
			order[i] = i
		}
		return in(order...)
	}
	reversed := func() [][]byte {
		order := make([]int, len(byIndex))
		for i := range order {
			order[i] = len(byIndex) - 1 - i
		}
		return in(order...)
	}
	cat := func(parts ...[][]byte) [][]byte {
		var out [][]byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name    string
		deliver [][]byte
		forged  int // chunks counted as forged
	}{
		{"another message under a later sequence first", cat(ownMessage(msgChunk, ahead, garbage)[:1], all()), 0},
		{"another message under the same sequence first", cat(ownMessage(msgChunk, seq, garbage)[:1], all()), 0},
		{"an unlinked chunk of another count under the same sequence", cat(func() [][]byte {
			m, _ := encodeChunks("gw", seq, make([]byte, 1336*(len(byIndex)+1)), 1336)
			return m[:2]
		}(), all()), 0},
		{"as many messages of its own as may be assembled", cat(
			ownMessage(msgChunk, ahead, garbage)[:1], ownMessage(msgChunk, ahead+1, garbage)[:1],
			ownMessage(msgChunk, ahead+2, garbage)[:1], all()), 0},
		{"a forged piece of the genuine message before its first chunk", cat([][]byte{tampered(t, byIndex[1])}, all()), 0},
		{
			"a forged piece of the genuine message after its first chunk",
			cat(in(0), [][]byte{tampered(t, byIndex[1])}, all()[1:]),
			1,
		},
		{"a forged first chunk under the genuine head", cat([][]byte{tampered(t, byIndex[0])}, all()), 1},
		{"forged pieces in every slot, the genuine one again later", cat(
			[][]byte{tampered(t, byIndex[1]), tampered(t, tampered(t, byIndex[1]))}, reversed(), in(1)), 0},
		{"a forged one-chunk summary with a later sequence mid-assembly", cat(in(0), [][]byte{forgedSingle}, all()[1:]), 0},
		{
			"a head that is not the first chunk's digest",
			cat([][]byte{linkedMsg("gw", seq, 0, 2, digest{1}, digest{2}, first.payload)}, all()),
			1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &keyVerifier{}
			v.pub.Store(&pub)
			router := newIdentityNode(t, clock, nil, v, nil)
			for _, m := range tt.deliver {
				queued, forged := router.queue.NumQueued(), testutil.ToFloat64(
					router.metrics.rejected.WithLabelValues(RejectForgedChunk),
				)
				router.handleChunk(m)
				if testutil.ToFloat64(router.metrics.rejected.WithLabelValues(RejectForgedChunk)) > forged &&
					router.queue.NumQueued() > queued {
					t.Error("a chunk counted as forged was queued for relay")
				}
			}
			got := router.store.entriesCopy()["gw"].summary
			if !proto.Equal(got, out) {
				t.Fatalf("router holds sequence %d, want the genuine %d", got.GetSequence(), seq)
			}
			if n := testutil.ToFloat64(router.metrics.rejected.WithLabelValues(RejectForgedChunk)); n != float64(tt.forged) {
				t.Errorf("rejected{forged_chunk} = %v, want %d", n, tt.forged)
			}
		})
	}
}

// TestLinkedChunksOnlyWhenEveryMemberReadsThem: a publisher cuts a large summary into linked
// chunks while every alive member advertises featureLinkedChunks, and into plain chunks (which
// every version reads) while one does not; one-chunk messages are never linked.
func TestLinkedChunksOnlyWhenEveryMemberReadsThem(t *testing.T) {
	blob := make([]byte, 5000)
	for i := range blob {
		blob[i] = byte(i * 7)
	}
	for _, linked := range []bool{false, true} {
		msgs, err := encodeParts(msgChunk, "gw", 5, blob, 1336, linked)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if (m[0] == msgLinked) != linked || len(m) > 1336 {
				t.Fatalf("linked=%v: message type %#x, %d bytes", linked, m[0], len(m))
			}
		}
		single, _ := encodeParts(msgDelta, "gw", 5, blob[:100], 1336, linked)
		if len(single) != 1 || single[0][0] != msgDelta {
			t.Fatalf("linked=%v: one-chunk delta as %#x", linked, single[0][0])
		}
	}
	p := &peers{members: map[string]*memberRecord{}}
	p.members["old"] = &memberRecord{Member: Member{State: StateAlive}, features: ownFeatures &^ featureLinkedChunks}
	p.members["new"] = &memberRecord{Member: Member{State: StateAlive}, features: ownFeatures}
	count := func() {
		p.unlinked = 0
		for _, r := range p.members {
			if r.State == StateAlive && r.features&featureLinkedChunks == 0 {
				p.unlinked++
			}
		}
	}
	count()
	if p.allReadLinkedChunks() {
		t.Fatal("a member without the feature is alive, yet linked chunks are written")
	}
	p.members["old"].State = StateDead
	count()
	if !p.allReadLinkedChunks() {
		t.Fatal("every alive member reads linked chunks, yet they are not written")
	}
}

// TestDecodeLinkedChunkRejects: malformed linked chunk headers.
func TestDecodeLinkedChunkRejects(t *testing.T) {
	tests := []struct {
		name string
		msg  []byte
	}{
		{"one chunk", linkedMsg("gw", 5, 0, 1, digest{1}, digest{}, []byte{1})},
		{"digests cut short", linkedMsg("gw", 5, 0, 2, digest{1}, digest{2}, nil)[:20]},
		{"last chunk with a link", linkedMsg("gw", 5, 1, 2, digest{1}, digest{2}, []byte{1})},
		{"inner chunk without a link", linkedMsg("gw", 5, 0, 2, digest{1}, digest{}, []byte{1})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if c, err := decodeChunk(tt.msg); err == nil {
				t.Fatalf("decodeChunk accepted %+v", c)
			}
		})
	}
}
