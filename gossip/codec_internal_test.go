package gossip

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

func bigSummary(node string, seq uint64, models int) *gossipv1.CapacitySummary {
	s := &gossipv1.CapacitySummary{Node: node, Sequence: seq, Cluster: "c1", GeneratedAtUnixNano: 1}
	for i := 0; i < models; i++ {
		m := &gossipv1.ModelCapacity{
			Name:         "model-" + string(rune('a'+i%26)) + string(rune('a'+i/26)),
			ReadyPods:    uint32(i),
			FreeKvTokens: uint64(i) * 7919,
		}
		for j := 0; j < 20; j++ {
			m.Adapters = append(
				m.Adapters,
				&gossipv1.AdapterCapacity{Name: "adapter-" + string(rune('a'+j)), ResidentPods: uint32(j)},
			)
		}
		s.Models = append(s.Models, m)
	}
	s.PrefixSketch = &gossipv1.PrefixSketch{
		Bits:      bytes.Repeat([]byte{0x5a, 0x13, 0x77}, 1500),
		NumBits:   4500 * 8,
		NumHashes: 7,
	}
	return s
}

func TestChunksReassembleInAnyOrder(t *testing.T) {
	tests := []struct {
		name   string
		models int
		order  func(n int) []int
	}{
		{"one chunk", 1, func(n int) []int { return []int{0} }},
		{"many chunks in order", 50, func(n int) []int { return seqIdx(n, false) }},
		{"many chunks reversed", 50, func(n int) []int { return seqIdx(n, true) }},
	}
	for _, tt := range tests {
		for _, linked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/linked=%v", tt.name, linked), func(t *testing.T) {
				chunksReassemble(t, tt.models, tt.order, linked)
			})
		}
	}
}

// chunksReassemble cuts a summary of models into chunks (linked or not), hands them to a store in
// order, and checks that exactly the last completes it.
func chunksReassemble(t *testing.T, models int, order func(int) []int, linked bool) {
	sum := bigSummary("n1", 9, models)
	blob, err := EncodeSummary(sum)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := encodeParts(msgChunk, "n1", 9, blob, 1336, linked)
	if err != nil {
		t.Fatal(err)
	}
	st := newStore(1 << 20)
	var got *gossipv1.CapacitySummary
	for k, i := range order(len(msgs)) {
		if len(msgs[i]) > 1336 {
			t.Fatalf("chunk %d is %d bytes", i, len(msgs[i]))
		}
		c, err := decodeChunk(msgs[i])
		if err != nil {
			t.Fatal(err)
		}
		out, s, err := st.addChunk(c, time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		if (out == chunkApplied) != (k == len(msgs)-1) {
			t.Fatalf("chunk %d of %d: outcome %v", k, len(msgs), out)
		}
		got = s
	}
	if !proto.Equal(got, sum) {
		t.Error("reassembled summary differs")
	}
	c, _ := decodeChunk(msgs[0])
	if out, _, _ := st.addChunk(c, time.Unix(0, 0)); out != chunkStale {
		t.Errorf("replayed chunk outcome %v, want stale", out)
	}
	if len(msgs) > 1 && c.linked != linked {
		t.Errorf("linked chunks = %v, want %v", c.linked, linked)
	}
}

func seqIdx(n int, reverse bool) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
		if reverse {
			out[i] = n - 1 - i
		}
	}
	return out
}

func TestStoreNewestSequenceWins(t *testing.T) {
	st := newStore(1 << 20)
	now := time.Unix(100, 0)
	if !st.apply(&gossipv1.CapacitySummary{Node: "a", Sequence: 5}, now) {
		t.Fatal("first summary not applied")
	}
	tests := []struct {
		name string
		seq  uint64
		want bool
	}{
		{"older", 4, false},
		{"same", 5, false},
		{"newer", 6, true},
		{"older than newest", 5, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := st.apply(&gossipv1.CapacitySummary{Node: "a", Sequence: tt.seq}, now); got != tt.want {
				t.Errorf("apply(seq %d) = %v, want %v", tt.seq, got, tt.want)
			}
		})
	}
	if st.newest("a") != 6 {
		t.Errorf("newest = %d", st.newest("a"))
	}
}

func TestStoreRejectsInconsistentChunks(t *testing.T) {
	st := newStore(2048)
	if _, _, err := st.addChunk(
		chunk{node: "a", seq: 2, index: 0, count: 3, payload: []byte{1}},
		time.Time{},
	); err != nil {
		t.Fatal(err)
	}
	// Another count under the same sequence is another message (perhaps forged): it assembles
	// apart and leaves the first one's chunks alone.
	if out, _, err := st.addChunk(
		chunk{node: "a", seq: 2, index: 1, count: 4, payload: []byte{1}},
		time.Time{},
	); err != nil ||
		out != chunkPartial {
		t.Errorf("count mismatch: outcome %v, err %v; want a partial assembly of its own", out, err)
	}
	if out, _, err := st.addChunk(
		chunk{node: "a", seq: 2, index: 1, count: 3, payload: []byte{2}},
		time.Time{},
	); err != nil ||
		out != chunkPartial {
		t.Errorf("first message's second chunk: outcome %v, err %v", out, err)
	}
	if _, _, err := st.addChunk(
		chunk{node: "a", seq: 3, index: 0, count: 2, payload: make([]byte, 4096)},
		time.Time{},
	); !errors.Is(
		err,
		ErrMalformed,
	) {
		t.Errorf("oversize assembly: err %v", err)
	}
	out, _, err := st.addChunk(chunk{node: "b", seq: 1, index: 0, count: 1, payload: []byte{codecRaw, 0xff}}, time.Time{})
	if err == nil || out == chunkApplied {
		t.Errorf("garbage summary: outcome %v err %v", out, err)
	}
}

func TestLeaveRoundTrip(t *testing.T) {
	node, seq, err := decodeLeave(encodeLeave("gw-1", 77))
	if err != nil || node != "gw-1" || seq != 77 {
		t.Fatalf("decodeLeave = %q %d %v", node, seq, err)
	}
}

func FuzzDecodeChunk(f *testing.F) {
	blob, _ := EncodeSummary(bigSummary("n", 3, 2))
	msgs, _ := encodeChunks("n", 3, blob, 1336)
	for _, m := range msgs {
		f.Add(m)
	}
	base := deltaBase(2, 3, 2)
	next := edit(base, 3, func(s *gossipv1.CapacitySummary) { s.Models[1].QueueDepth = 5 })
	fb, _ := EncodeSummary(base)
	db, _ := encodeDelta(diffSummary(base, next))
	for _, m := range []struct {
		kind byte
		blob []byte
	}{{msgChunk, fb}, {msgDelta, db}} {
		msgs, _ := encodeParts(m.kind, "gw", 3, m.blob, 1336, false)
		f.Add(msgs[0])
	}
	linked, _ := encodeParts(msgChunk, "n", 3, bytes.Repeat([]byte{1, 2, 3, 5, 8, 13, 21}, 600), 1336, true)
	for _, m := range linked {
		f.Add(m)
	}
	f.Add(encodeLeave("x", 1))
	f.Add(encodeWantFull("x"))
	f.Add([]byte{msgChunk, 1, 'a', 1, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		st := newStore(1 << 16)
		if c, err := decodeChunk(b); err == nil {
			if c.index >= c.count || c.count > MaxChunks || c.node == "" {
				t.Fatalf("accepted bad header %+v", c)
			}
			if c.linked && (c.count < 2 || (c.index+1 == c.count) != c.link.zero()) {
				t.Fatalf("accepted bad linked header %+v", c)
			}
			_, _, _ = st.addChunk(c, time.Time{})
		}
		_, _, _ = decodeLeave(b)
		_, _ = decodeWantFull(b)
		_, _ = decodeState(b, 1<<16)
	})
}
