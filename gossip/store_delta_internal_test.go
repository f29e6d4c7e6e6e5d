package gossip

import (
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// wire is what a publisher sent for one summary: full chunks or delta chunks.
type wire struct {
	sum  *gossipv1.CapacitySummary // as the publisher holds it
	msgs [][]byte
}

// fullWire encodes s as a full summary.
func fullWire(t *testing.T, s *gossipv1.CapacitySummary) wire {
	t.Helper()
	blob, err := EncodeSummary(s)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := encodeChunks(s.GetNode(), s.GetSequence(), blob, 1336)
	if err != nil {
		t.Fatal(err)
	}
	return wire{sum: s, msgs: msgs}
}

// deltaWire encodes s as a delta against base.
func deltaWire(t *testing.T, base, s *gossipv1.CapacitySummary) wire {
	t.Helper()
	d := diffSummary(base, s)
	if d == nil {
		t.Fatal("no delta")
	}
	blob, err := encodeDelta(d)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := encodeParts(msgDelta, s.GetNode(), s.GetSequence(), blob, 1336, true)
	if err != nil {
		t.Fatal(err)
	}
	return wire{sum: s, msgs: msgs}
}

// deliver hands every message of w to st and returns the last outcome.
func deliver(t *testing.T, st *store, w wire) outcome {
	t.Helper()
	return deliverAt(t, st, w, time.Unix(1, 0))
}

// held returns the summary st holds from node "gw", or nil.
func held(st *store, node string) *gossipv1.CapacitySummary {
	if e := st.entriesCopy()[node]; e.summary != nil {
		return e.summary
	}
	return nil
}

// A publisher's history: full 10, deltas 11 and 12 against it, full 13, delta 14 against 13.
func history(t *testing.T) []wire {
	full10 := deltaBase(10, 5, 4)
	s11 := edit(full10, 11, func(s *gossipv1.CapacitySummary) { s.Models[0].QueueDepth = 11 })
	s12 := edit(full10, 12, func(s *gossipv1.CapacitySummary) { s.Models[1].QueueDepth, s.Models[2].Adapters = 12, nil })
	full13 := edit(s12, 13, func(s *gossipv1.CapacitySummary) { s.Models[3].FreeKvTokens = 13 })
	s14 := edit(full13, 14, func(s *gossipv1.CapacitySummary) { s.Models[4].Running = 14 })
	return []wire{
		fullWire(t, full10),
		deltaWire(t, full10, s11),
		deltaWire(t, full10, s12),
		fullWire(t, full13),
		deltaWire(t, full13, s14),
	}
}

func TestStoreAppliesDeltas(t *testing.T) {
	h := history(t)
	tests := []struct {
		name     string
		order    []int     // indices into history, in delivery order
		outcomes []outcome // per delivery
		want     int       // index into history of the summary held at the end
	}{
		{
			"in order",
			[]int{0, 1, 2, 3, 4},
			[]outcome{chunkApplied, chunkApplied, chunkApplied, chunkApplied, chunkApplied},
			4,
		},
		{"a delta lost", []int{0, 2, 3, 4}, []outcome{chunkApplied, chunkApplied, chunkApplied, chunkApplied}, 4},
		{"deltas older than held", []int{0, 2, 1}, []outcome{chunkApplied, chunkApplied, chunkStale}, 2},
		{"missed the full: next full", []int{1, 2, 3, 4}, []outcome{chunkParked, chunkParked, chunkApplied, chunkApplied}, 4},
		{"delta before its full", []int{2, 0}, []outcome{chunkParked, chunkApplied}, 2},
		{"delta before its full, then an older delta", []int{2, 1, 0}, []outcome{chunkParked, chunkStale, chunkApplied}, 2},
		{"delta against a base older than held", []int{3, 1}, []outcome{chunkApplied, chunkStale}, 3},
		{"delta against a newer base than held", []int{0, 4}, []outcome{chunkApplied, chunkParked}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore(1 << 20)
			for k, i := range tt.order {
				if out := deliver(t, st, h[i]); out != tt.outcomes[k] {
					t.Fatalf("delivery %d (history %d): outcome %v, want %v", k, i, out, tt.outcomes[k])
				}
				// Never a misapplied delta: whatever is held is exactly one of the publisher's summaries.
				if got := held(st, "gw"); got != nil && !proto.Equal(got, h[indexOfSeq(h, got.GetSequence())].sum) {
					t.Fatalf("after delivery %d the store holds a summary %d unlike the publisher's", k, got.GetSequence())
				}
			}
			if got := held(st, "gw"); !proto.Equal(got, h[tt.want].sum) {
				t.Errorf("holds sequence %d, want %d", got.GetSequence(), h[tt.want].sum.GetSequence())
			}
			if out := deliver(t, st, h[tt.order[len(tt.order)-1]]); out != chunkStale && out != chunkDuplicate {
				t.Errorf("replayed last message: outcome %v, want stale or duplicate", out)
			}
		})
	}
}

func indexOfSeq(h []wire, seq uint64) int {
	for i, w := range h {
		if w.sum.GetSequence() == seq {
			return i
		}
	}
	return -1
}

// A node that missed the full summary is brought up to date by push/pull, which carries the base
// with the summary, and then applies the publisher's next delta.
func TestPushPullCarriesBases(t *testing.T) {
	h := history(t)
	src := newStore(1 << 20)
	for _, i := range []int{0, 1, 2} {
		deliver(t, src, h[i])
	}
	src.apply(&gossipv1.CapacitySummary{Node: "other", Sequence: 3}, time.Unix(1, 0))
	state, err := encodeState(src.all())
	if err != nil {
		t.Fatal(err)
	}

	// A reader that predates bases sees the complete newest summaries.
	var old gossipv1.NodeState
	if err := decodeBlob(state[1:], &old, 1<<20); err != nil {
		t.Fatal(err)
	}
	if len(old.GetSummaries()) != 2 || !proto.Equal(old.GetSummaries()[0], h[2].sum) || len(old.GetBases()) != 1 ||
		!proto.Equal(old.GetBases()[0], h[0].sum) {
		t.Fatalf("state holds %d summaries, %d bases", len(old.GetSummaries()), len(old.GetBases()))
	}

	dst := newStore(1 << 20)
	if out := deliver(t, dst, h[1]); out != chunkParked {
		t.Fatalf("delta without base: outcome %v", out)
	}
	got, err := decodeState(state, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, hs := range got {
		dst.applyHeld(hs, time.Unix(2, 0))
	}
	if !proto.Equal(held(dst, "gw"), h[2].sum) {
		t.Fatal("push/pull did not bring the newest summary")
	}
	later := edit(h[0].sum, 15, func(s *gossipv1.CapacitySummary) { s.Models[2].Running = 99 })
	if out := deliver(t, dst, deltaWire(t, h[0].sum, later)); out != chunkApplied {
		t.Fatalf("delta after push/pull: outcome %v, want applied", out)
	}
	if !proto.Equal(held(dst, "gw"), later) {
		t.Error("delta after push/pull rebuilt the wrong summary")
	}
}

func TestSweepDropsParkedDeltas(t *testing.T) {
	h := history(t)
	st := newStore(1 << 20)
	deliver(t, st, h[2])
	never := func(entry) bool { return false }
	st.sweep(time.Unix(1, 0), never, never)
	if len(st.parked) != 1 {
		t.Fatal("a fresh parked delta was dropped")
	}
	st.sweep(time.Unix(5, 0), never, never)
	if len(st.parked) != 0 {
		t.Error("an old parked delta was kept")
	}
}

// A delta whose base is not held is parked quietly while the base may still be in flight, and
// reported as a missed base (worth a request for a full summary) once the base is overdue.
func TestStoreReportsOverdueBase(t *testing.T) {
	full := deltaBase(10, 3, 2)
	tests := []struct {
		name  string
		after time.Duration // sequence distance from the base
		want  outcome
	}{
		{"base may be in flight", baseGrace - time.Millisecond, chunkParked},
		{"base overdue", baseGrace, chunkBaseMissed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := edit(
				full,
				full.GetSequence()+uint64(tt.after),
				func(s *gossipv1.CapacitySummary) { s.Models[0].Running = 1 },
			)
			if out := deliver(t, newStore(1<<20), deltaWire(t, full, next)); out != tt.want {
				t.Errorf("outcome %v, want %v", out, tt.want)
			}
		})
	}
}

// deliverAt hands every message of w to st at now and returns the last outcome.
func deliverAt(t *testing.T, st *store, w wire, now time.Time) outcome {
	t.Helper()
	var out outcome
	for _, m := range w.msgs {
		c, err := decodeChunk(m)
		if err != nil {
			t.Fatal(err)
		}
		if out, _, err = st.addChunk(c, now); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// A receiver that gets deltas against a base it has seen nothing of counts the base as missed
// after baseWait of its own clock from the first such delta, long before the publisher's
// sequence clock says the base is overdue; a base whose chunks are still arriving is waited for.
func TestStoreMissingBaseWaitedByReceiverClock(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	t0 := time.Unix(100, 0)
	full := deltaBase(uint64(time.Second), 4, 2)
	bits := make([]byte, 4096) // an incompressible sketch: the base takes several chunks
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range bits {
		bits[i] = byte(rng.Uint32())
	}
	full.PrefixSketch = &gossipv1.PrefixSketch{Bits: bits, NumBits: 8 * 4096, NumHashes: 3}
	later := func(d time.Duration, q uint32) wire {
		return deltaWire(
			t,
			full,
			edit(full, full.GetSequence()+uint64(d), func(s *gossipv1.CapacitySummary) { s.Models[0].QueueDepth = q }),
		)
	}
	if fw := fullWire(t, full); len(fw.msgs) < 2 {
		t.Fatalf("the base encodes to %d chunk(s); the test needs several", len(fw.msgs))
	}

	t.Run("base never seen", func(t *testing.T) {
		st := newStore(1 << 20)
		st.baseWait = ms(500)
		steps := []struct {
			at   time.Duration // receiver clock from t0
			seq  time.Duration // publisher clock from the base
			want outcome
		}{
			{0, ms(250), chunkParked},
			{ms(400), ms(500), chunkParked},
			{ms(500), ms(750), chunkBaseMissed}, // 500 ms after the first: lost
		}
		for i, s := range steps {
			if out := deliverAt(t, st, later(s.seq, uint32(i+1)), t0.Add(s.at)); out != s.want {
				t.Fatalf("step %d: outcome %v, want %v", i, out, s.want)
			}
		}
		// The base arrives after all: the newest parked delta applies.
		deliverAt(t, st, fullWire(t, full), t0.Add(ms(600)))
		if got := held(st, full.GetNode()); got == nil || got.GetModels()[0].GetQueueDepth() != 3 {
			t.Fatalf("held %v after the base arrived, want the last delta applied", got)
		}
	})

	t.Run("base arriving", func(t *testing.T) {
		st := newStore(1 << 20)
		st.baseWait = ms(500)
		fw := fullWire(t, full)
		deliverAt(t, st, wire{msgs: fw.msgs[:1]}, t0) // its first chunk only
		if out := deliverAt(t, st, later(ms(250), 1), t0); out != chunkParked {
			t.Fatalf("outcome %v, want parked", out)
		}
		if out := deliverAt(t, st, later(ms(900), 2), t0.Add(ms(900))); out != chunkParked {
			t.Fatalf("base still arriving: outcome %v, want parked", out)
		}
		if out := deliverAt(t, st, later(baseGrace, 3), t0.Add(baseGrace)); out != chunkBaseMissed {
			t.Fatalf("base overdue by the sequence clock: outcome %v, want missed", out)
		}
	})

	t.Run("no receiver wait", func(t *testing.T) {
		st := newStore(1 << 20) // baseWait 0: the sequence clock alone
		if out := deliverAt(t, st, later(ms(250), 1), t0); out != chunkParked {
			t.Fatalf("outcome %v, want parked", out)
		}
		if out := deliverAt(t, st, later(ms(500), 2), t0.Add(2*time.Second)); out != chunkParked {
			t.Fatalf("outcome %v, want parked", out)
		}
	})
}

func TestBaseWaitFor(t *testing.T) {
	for _, tc := range []struct{ interval, want time.Duration }{
		{10 * time.Millisecond, 250 * time.Millisecond},
		{100 * time.Millisecond, 500 * time.Millisecond},
		{200 * time.Millisecond, time.Second},
		{time.Second, baseGrace},
	} {
		if got := baseWaitFor(tc.interval); got != tc.want {
			t.Errorf("baseWaitFor(%v) = %v, want %v", tc.interval, got, tc.want)
		}
	}
}
