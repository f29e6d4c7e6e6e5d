package gossip

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// deltaBase returns a summary of node "gw" with sequence seq: models × adapters, per-model
// sketches on every third model and a cluster-wide sketch.
func deltaBase(seq uint64, models, adapters int) *gossipv1.CapacitySummary {
	s := &gossipv1.CapacitySummary{SchemaVersion: 1, Node: "gw", Sequence: seq, Cluster: "c1", Region: "r1",
		GatewayUrl: "http://gw:8080", GeneratedAtUnixNano: int64(seq)}
	for i := 0; i < models; i++ {
		m := &gossipv1.ModelCapacity{Name: fmt.Sprintf("model-%02d", i), ReadyPods: 4, TotalKvTokens: 1 << 20,
			FreeKvTokens: uint64(i) * 1000, QueueDepth: uint32(i), Running: 10, PredictedTtftMs: 80, DecodeTokensPerSecond: 9000}
		for j := 0; j < adapters; j++ {
			m.Adapters = append(
				m.Adapters,
				&gossipv1.AdapterCapacity{Name: fmt.Sprintf("lora-%02d", j), ResidentPods: 1, Running: uint32(j)},
			)
		}
		if i%3 == 0 {
			m.PrefixSketch = &gossipv1.PrefixSketch{Bits: []byte{byte(i), 1, 2, 3}, NumBits: 32, NumHashes: 3, Seed: 7}
		}
		s.Models = append(s.Models, m)
	}
	s.PrefixSketch = &gossipv1.PrefixSketch{Bits: []byte{9, 9}, NumBits: 16, NumHashes: 2}
	return s
}

// edit returns a copy of base as summary seq, changed by f.
func edit(base *gossipv1.CapacitySummary, seq uint64, f func(s *gossipv1.CapacitySummary)) *gossipv1.CapacitySummary {
	s := proto.Clone(base).(*gossipv1.CapacitySummary)
	s.Sequence, s.GeneratedAtUnixNano = seq, int64(seq)
	f(s)
	return s
}

// roundTrip encodes d, decodes it and applies it to base, checking that base is left unchanged
// and that d with the long header (as publishers before the compact header sent it) rebuilds the
// same summary.
func roundTrip(t *testing.T, base *gossipv1.CapacitySummary, d *gossipv1.SummaryDelta) *gossipv1.CapacitySummary {
	t.Helper()
	long, err := proto.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	blob, err := encodeDelta(d)
	if err != nil {
		t.Fatal(err)
	}
	var outs []*gossipv1.CapacitySummary
	for _, b := range [][]byte{blob, append([]byte{codecRaw}, long...)} {
		got, err := decodeDelta(b, d.GetNode(), d.GetSequence(), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if got.GetNode() != d.GetNode() || got.GetSequence() != d.GetSequence() ||
			got.GetBaseSequence() != d.GetBaseSequence() ||
			got.GetGeneratedAtUnixNano() != d.GetGeneratedAtUnixNano() {
			t.Fatalf(
				"decoded header %s/%d base %d at %d, want %s/%d base %d at %d",
				got.GetNode(),
				got.GetSequence(),
				got.GetBaseSequence(),
				got.GetGeneratedAtUnixNano(),
				d.GetNode(),
				d.GetSequence(),
				d.GetBaseSequence(),
				d.GetGeneratedAtUnixNano(),
			)
		}
		before := proto.Clone(base)
		out, err := applyDelta(base, got)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(before, base) {
			t.Fatal("applying a delta modified its base")
		}
		outs = append(outs, out)
	}
	if !proto.Equal(outs[0], outs[1]) {
		t.Fatalf("compact and long headers rebuild different summaries:\n%v\n%v", outs[0], outs[1])
	}
	// As written for members that predate compact deltas: only fields they know, same summary.
	legacy := legacyDelta(diffSummary(base, outs[0]), outs[0]) // not a proto.Clone of d, which drops -0 figures
	if !knownToFirstDeltas(legacy) {
		t.Fatalf("legacy delta %v carries fields readers of the first deltas do not know", legacy)
	}
	lb, err := encodeBlob(legacy)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeDelta(lb, d.GetNode(), d.GetSequence(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := applyDelta(base, got); err != nil || !proto.Equal(out, outs[0]) {
		t.Fatalf("legacy delta rebuilds %v, %v; want %v", out, err, outs[0])
	}
	return outs[0]
}

// knownToFirstDeltas reports whether d sets only fields that readers of the first deltas (long
// header, figures in full) know.
func knownToFirstDeltas(d *gossipv1.SummaryDelta) bool {
	if d.GetBaseDistance() != 0 || d.GetGeneratedAtOffset() != 0 {
		return false
	}
	for _, md := range d.GetModels() {
		if md.GetFigureMask() != 0 || len(md.GetFigureValues()) > 0 {
			return false
		}
		for _, ad := range md.GetAdapters() {
			if ad.GetFigureMask() != 0 || len(ad.GetFigureValues()) > 0 {
				return false
			}
		}
	}
	return true
}

func TestDeltaRoundTrip(t *testing.T) {
	base := deltaBase(10, 6, 4)
	tests := []struct {
		name     string
		change   func(s *gossipv1.CapacitySummary)
		models   int // models the delta carries
		maxBytes int // bound on the encoded delta (compact header, figure masks)
	}{
		{"nothing changed", func(*gossipv1.CapacitySummary) {}, 0, 8},
		{"one figure", func(s *gossipv1.CapacitySummary) { s.Models[2].QueueDepth = 7 }, 1, 16},
		{"figures to zero", func(s *gossipv1.CapacitySummary) {
			m := s.Models[1]
			m.ReadyPods, m.TotalKvTokens, m.FreeKvTokens, m.QueueDepth, m.Running, m.PredictedTtftMs, m.DecodeTokensPerSecond = 0, 0, 0, 0, 0, 0, 0
		}, 1, 24},
		{"every model's figures", func(s *gossipv1.CapacitySummary) {
			for _, m := range s.Models {
				m.FreeKvTokens += 5000
				m.Saturated = true
			}
		}, 6, 64},
		{"one adapter's figures", func(s *gossipv1.CapacitySummary) { s.Models[4].Adapters[3].QueueDepth = 2 }, 1, 20},
		{"adapter loaded", func(s *gossipv1.CapacitySummary) {
			s.Models[0].Adapters = append(s.Models[0].Adapters, &gossipv1.AdapterCapacity{Name: "lora-new", ResidentPods: 1})
		}, 1, 64},
		{"adapter unloaded", func(s *gossipv1.CapacitySummary) { s.Models[5].Adapters = s.Models[5].Adapters[1:] }, 1, 52},
		{"every adapter unloaded", func(s *gossipv1.CapacitySummary) { s.Models[5].Adapters = nil }, 1, 12},
		{"adapters reordered", func(s *gossipv1.CapacitySummary) {
			a := s.Models[2].Adapters
			a[0], a[1] = a[1], a[0]
		}, 1, 56},
		{"model sketch changed", func(s *gossipv1.CapacitySummary) { s.Models[3].PrefixSketch.Bits[1] = 0xff }, 1, 24},
		{"model sketch added", func(s *gossipv1.CapacitySummary) {
			s.Models[1].PrefixSketch = &gossipv1.PrefixSketch{Bits: []byte{1}, NumBits: 8, NumHashes: 1}
		}, 1, 20},
		{"model sketch removed", func(s *gossipv1.CapacitySummary) { s.Models[0].PrefixSketch = nil }, 1, 10},
		{
			"model sketch emptied",
			func(s *gossipv1.CapacitySummary) { s.Models[0].PrefixSketch = &gossipv1.PrefixSketch{} },
			1,
			10,
		},
		{"cluster sketch changed", func(s *gossipv1.CapacitySummary) { s.PrefixSketch.NumItems = 5 }, 0, 20},
		{"cluster sketch removed", func(s *gossipv1.CapacitySummary) { s.PrefixSketch = nil }, 0, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := edit(base, 12, tt.change)
			d := diffSummary(base, next)
			if d == nil {
				t.Fatal("no delta")
			}
			if len(d.GetModels()) != tt.models {
				t.Errorf("delta carries %d models, want %d", len(d.GetModels()), tt.models)
			}
			if blob, _ := encodeDelta(d); len(blob) > tt.maxBytes {
				t.Errorf("delta is %d bytes encoded, want at most %d", len(blob), tt.maxBytes)
			}
			if got := roundTrip(t, base, d); !proto.Equal(got, next) {
				t.Errorf("rebuilt summary differs:\n got %v\nwant %v", got, next)
			}
		})
	}
}

func TestDeltaNotPossible(t *testing.T) {
	base := deltaBase(10, 3, 2)
	tests := []struct {
		name string
		next *gossipv1.CapacitySummary
	}{
		{"other node", edit(base, 11, func(s *gossipv1.CapacitySummary) { s.Node = "gw-2" })},
		{"not newer", edit(base, 10, func(*gossipv1.CapacitySummary) {})},
		{"region changed", edit(base, 11, func(s *gossipv1.CapacitySummary) { s.Region = "r2" })},
		{"schema changed", edit(base, 11, func(s *gossipv1.CapacitySummary) { s.SchemaVersion = 2 })},
		{"model added", edit(base, 11, func(s *gossipv1.CapacitySummary) {
			s.Models = append(s.Models, &gossipv1.ModelCapacity{Name: "new"})
		})},
		{"model removed", edit(base, 11, func(s *gossipv1.CapacitySummary) { s.Models = s.Models[1:] })},
		{
			"models reordered",
			edit(base, 11, func(s *gossipv1.CapacitySummary) { s.Models[0], s.Models[1] = s.Models[1], s.Models[0] }),
		},
		{"unknown header field", edit(base, 11, func(s *gossipv1.CapacitySummary) {
			s.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1))
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := diffSummary(base, tt.next); d != nil {
				t.Errorf("delta %v, want none (a full summary)", d)
			}
		})
	}
}

// Unknown fields of a model travel in its figures, so a field added to ModelCapacity later is
// carried by deltas of nodes that do not know it.
func TestDeltaCarriesUnknownModelFields(t *testing.T) {
	base := deltaBase(10, 2, 1)
	next := edit(base, 11, func(s *gossipv1.CapacitySummary) {
		s.Models[1].ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 42))
	})
	d := diffSummary(base, next)
	if d == nil || len(d.GetModels()) != 1 {
		t.Fatalf("delta %v, want one model", d)
	}
	if got := roundTrip(t, base, d); !proto.Equal(got, next) {
		t.Error("unknown model field lost")
	}
}

// Property: for random changes, every delta against the same base rebuilds exactly the
// publisher's summary, and no delta exists only when the models or the header changed.
func TestDeltaRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 300; round++ {
		base := deltaBase(100, 1+r.IntN(8), r.IntN(6))
		seq := base.GetSequence()
		for k := 0; k < 5; k++ {
			seq += 1 + uint64(r.IntN(3))
			structural := false
			next := edit(base, seq, func(s *gossipv1.CapacitySummary) { structural = mutate(r, s) })
			d := diffSummary(base, next)
			if d == nil {
				if !structural {
					t.Fatalf("round %d: no delta for a change of figures only", round)
				}
				continue
			}
			if got := roundTrip(t, base, d); !proto.Equal(got, next) {
				t.Fatalf("round %d delta %d: rebuilt summary differs:\n got %v\nwant %v", round, k, got, next)
			}
		}
	}
}

// mutate changes s at random and reports whether it changed its models list or header, which
// no delta can express.
func mutate(r *rand.Rand, s *gossipv1.CapacitySummary) (structural bool) {
	for range 1 + r.IntN(6) {
		m := s.Models[r.IntN(len(s.Models))]
		switch r.IntN(16) {
		case 0:
			m.FreeKvTokens = uint64(r.IntN(1 << 20))
		case 1:
			m.QueueDepth, m.Running = uint32(r.IntN(50)), uint32(r.IntN(3))
		case 2:
			m.PredictedTtftMs, m.Saturation, m.Saturated = r.Float32()*500, r.Float32(), r.IntN(2) == 0
		case 3:
			if len(m.Adapters) > 0 {
				m.Adapters[r.IntN(len(m.Adapters))].QueueDepth = uint32(r.IntN(9))
			}
		case 4:
			m.Adapters = append(m.Adapters, &gossipv1.AdapterCapacity{Name: fmt.Sprintf("x-%d", r.IntN(1000)), Running: 1})
		case 5:
			if len(m.Adapters) > 0 {
				i := r.IntN(len(m.Adapters))
				m.Adapters = append(m.Adapters[:i:i], m.Adapters[i+1:]...)
			}
		case 6:
			m.PrefixSketch = nil
		case 7:
			m.PrefixSketch = &gossipv1.PrefixSketch{Bits: []byte{byte(r.IntN(256))}, NumBits: 8, NumHashes: 1}
		case 8:
			s.PrefixSketch = nil
			if r.IntN(2) == 0 {
				s.PrefixSketch = &gossipv1.PrefixSketch{Bits: []byte{byte(r.IntN(256))}, NumBits: 8}
			}
		case 9:
			s.Models = append(s.Models, &gossipv1.ModelCapacity{Name: fmt.Sprintf("new-%d", r.IntN(1000))})
			structural = true
		case 10:
			s.GatewayUrl = fmt.Sprintf("http://gw-%d:8080", r.IntN(1000))
			structural = true
		case 11:
			m.ReadyPods = uint32(r.IntN(3))
		case 12: // any float, NaN and negative zero included
			m.Saturation, m.DecodeTokensPerSecond = math.Float32frombits(r.Uint32()), float32(math.Copysign(0, -1))
		case 13:
			for _, a := range m.Adapters {
				a.ResidentPods, a.QueueDepth, a.Running = uint32(r.IntN(2)), 0, r.Uint32()
			}
		case 14: // a field a later version added: the model's figures travel whole
			m.ProtoReflect().
				SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), uint64(r.IntN(9))))
		case 15:
			if len(m.Adapters) > 0 {
				a := m.Adapters[r.IntN(len(m.Adapters))]
				a.ProtoReflect().
					SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), uint64(r.IntN(9))))
			}
		}
	}
	return structural
}

func TestApplyDeltaRejects(t *testing.T) {
	base := deltaBase(10, 3, 2)
	good := func() *gossipv1.SummaryDelta {
		return &gossipv1.SummaryDelta{Node: "gw", Sequence: 11, BaseSequence: 10,
			Models: []*gossipv1.ModelDelta{{Index: 1, Figures: &gossipv1.ModelCapacity{QueueDepth: 3}}}}
	}
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1)
	tests := []struct {
		name   string
		change func(d *gossipv1.SummaryDelta)
	}{
		{"other node", func(d *gossipv1.SummaryDelta) { d.Node = "gw-2" }},
		{"other base", func(d *gossipv1.SummaryDelta) { d.BaseSequence = 9 }},
		{"not above base", func(d *gossipv1.SummaryDelta) { d.Sequence = 10 }},
		{"model index out of range", func(d *gossipv1.SummaryDelta) { d.Models[0].Index = 3 }},
		{"model indices unordered", func(d *gossipv1.SummaryDelta) {
			d.Models = append(d.Models, &gossipv1.ModelDelta{Index: 0, Figures: &gossipv1.ModelCapacity{}})
		}},
		{"model index repeated", func(d *gossipv1.SummaryDelta) {
			d.Models = append(d.Models, &gossipv1.ModelDelta{Index: 1, Figures: &gossipv1.ModelCapacity{}})
		}},
		{"figures with a name", func(d *gossipv1.SummaryDelta) { d.Models[0].Figures.Name = "other" }},
		{"figures with adapters", func(d *gossipv1.SummaryDelta) {
			d.Models[0].Figures.Adapters = []*gossipv1.AdapterCapacity{{Name: "a"}}
		}},
		{"adapter list and adapter deltas", func(d *gossipv1.SummaryDelta) {
			d.Models[0].AdapterList = &gossipv1.AdapterList{}
			d.Models[0].Adapters = []*gossipv1.AdapterDelta{{Index: 0, Figures: &gossipv1.AdapterCapacity{}}}
		}},
		{"adapter index out of range", func(d *gossipv1.SummaryDelta) {
			d.Models[0].Adapters = []*gossipv1.AdapterDelta{{Index: 2, Figures: &gossipv1.AdapterCapacity{}}}
		}},
		{
			"adapter without figures",
			func(d *gossipv1.SummaryDelta) { d.Models[0].Adapters = []*gossipv1.AdapterDelta{{Index: 0}} },
		},
		{"adapter figures with a name", func(d *gossipv1.SummaryDelta) {
			d.Models[0].Adapters = []*gossipv1.AdapterDelta{{Index: 0, Figures: &gossipv1.AdapterCapacity{Name: "x"}}}
		}},
		{"sketch sent and removed", func(d *gossipv1.SummaryDelta) {
			d.PrefixSketch, d.PrefixSketchRemoved = &gossipv1.PrefixSketch{}, true
		}},
		{"figures and a figure mask", func(d *gossipv1.SummaryDelta) {
			d.Models[0].FigureMask, d.Models[0].FigureValues = 1<<1, []uint64{2}
		}},
		{"figure values without a mask", func(d *gossipv1.SummaryDelta) {
			d.Models[0].Figures, d.Models[0].FigureValues = nil, []uint64{2}
		}},
		{"figure mask naming the model name", func(d *gossipv1.SummaryDelta) {
			d.Models[0].Figures, d.Models[0].FigureMask, d.Models[0].FigureValues = nil, 1, []uint64{2}
		}},
		{"figure mask value out of range", func(d *gossipv1.SummaryDelta) {
			d.Models[0].Figures, d.Models[0].FigureMask, d.Models[0].FigureValues = nil, 1<<1, []uint64{1 << 40}
		}},
		{"adapter figures and a mask", func(d *gossipv1.SummaryDelta) {
			d.Models[0].Adapters = []*gossipv1.AdapterDelta{
				{Figures: &gossipv1.AdapterCapacity{}, FigureMask: 1 << 1, FigureValues: []uint64{1}},
			}
		}},
		{"adapter mask naming the adapter name", func(d *gossipv1.SummaryDelta) {
			d.Models[0].Adapters = []*gossipv1.AdapterDelta{{FigureMask: 1, FigureValues: []uint64{1}}}
		}},
		{"adapter mask without values", func(d *gossipv1.SummaryDelta) {
			d.Models[0].Adapters = []*gossipv1.AdapterDelta{{FigureMask: 1 << 2}}
		}},
		{"unknown delta field", func(d *gossipv1.SummaryDelta) { d.ProtoReflect().SetUnknown(unknown) }},
		{"unknown model delta field", func(d *gossipv1.SummaryDelta) { d.Models[0].ProtoReflect().SetUnknown(unknown) }},
	}
	if _, err := applyDelta(base, good()); err != nil {
		t.Fatalf("valid delta refused: %v", err)
	}
	masked := good()
	masked.Models[0].Figures, masked.Models[0].FigureMask, masked.Models[0].FigureValues = nil, 1<<4, []uint64{3}
	masked.Models[0].Adapters = []*gossipv1.AdapterDelta{{Index: 1, FigureMask: 1 << 3, FigureValues: []uint64{5}}}
	if got, err := applyDelta(
		base,
		masked,
	); err != nil || got.GetModels()[1].GetQueueDepth() != 3 ||
		got.GetModels()[1].GetAdapters()[1].GetRunning() != 5 {
		t.Fatalf("valid masked delta: %v, %v", got.GetModels()[1], err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := good()
			tt.change(d)
			if _, err := applyDelta(base, d); !errors.Is(err, ErrMalformed) {
				t.Errorf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestDecodeDeltaRejects(t *testing.T) {
	raw := func(d *gossipv1.SummaryDelta) []byte {
		b, err := proto.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return append([]byte{codecRaw}, b...)
	}
	// Every case arrives in chunks of node "n", sequence 2.
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"garbage", []byte{codecRaw, 0xff, 0xff}},
		{"no header", raw(&gossipv1.SummaryDelta{})},
		{"long: no node", raw(&gossipv1.SummaryDelta{Sequence: 2, BaseSequence: 1})},
		{"long: no base", raw(&gossipv1.SummaryDelta{Node: "n", Sequence: 2})},
		{"long: sequence not above base", raw(&gossipv1.SummaryDelta{Node: "n", Sequence: 2, BaseSequence: 2})},
		{"long: other node than the chunks", raw(&gossipv1.SummaryDelta{Node: "m", Sequence: 2, BaseSequence: 1})},
		{"long: other sequence than the chunks", raw(&gossipv1.SummaryDelta{Node: "n", Sequence: 3, BaseSequence: 1})},
		{
			"long with a generation offset",
			raw(&gossipv1.SummaryDelta{Node: "n", Sequence: 2, BaseSequence: 1, GeneratedAtOffset: 1}),
		},
		{"compact with a node", raw(&gossipv1.SummaryDelta{Node: "n", BaseDistance: 1})},
		{"compact with a sequence", raw(&gossipv1.SummaryDelta{Sequence: 2, BaseDistance: 1})},
		{"compact with a base sequence", raw(&gossipv1.SummaryDelta{BaseSequence: 1, BaseDistance: 1})},
		{"compact with a generation time", raw(&gossipv1.SummaryDelta{GeneratedAtUnixNano: 5, BaseDistance: 1})},
		{"compact: base at zero", raw(&gossipv1.SummaryDelta{BaseDistance: 2})},
		{"compact: base below zero", raw(&gossipv1.SummaryDelta{BaseDistance: 3})},
		{"generation offset alone", raw(&gossipv1.SummaryDelta{GeneratedAtOffset: -1})},
	}
	if _, err := decodeDelta(raw(&gossipv1.SummaryDelta{BaseDistance: 1}), "n", 2, 1<<16); err != nil {
		t.Fatalf("valid compact delta refused: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := decodeDelta(tt.b, "n", 2, 1<<16); !errors.Is(err, ErrMalformed) {
				t.Errorf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

// A reader that predates the compact header requires a node name and a base sequence in the
// delta, and refuses model deltas with fields it does not know: it drops compact deltas and
// figure masks rather than misapplying them.
func TestCompactDeltaRefusedByOlderReaders(t *testing.T) {
	base := deltaBase(10, 3, 2)
	d := diffSummary(base, edit(base, 11, func(s *gossipv1.CapacitySummary) { s.Models[1].QueueDepth = 9 }))
	blob, err := encodeDelta(d)
	if err != nil {
		t.Fatal(err)
	}
	var got gossipv1.SummaryDelta
	if err := decodeBlob(blob, &got, 1<<16); err != nil {
		t.Fatal(err)
	}
	if got.GetNode() != "" || got.GetBaseSequence() != 0 {
		t.Errorf(
			"compact delta carries node %q and base %d; older readers would accept it",
			got.GetNode(),
			got.GetBaseSequence(),
		)
	}
	if m := got.GetModels(); len(m) != 1 || m[0].GetFigures() != nil || m[0].GetFigureMask() == 0 {
		t.Errorf("model deltas %v, want one with a figure mask and no figures", m)
	}
}

func FuzzDecodeDelta(f *testing.F) {
	base := deltaBase(10, 4, 3)
	for _, change := range []func(s *gossipv1.CapacitySummary){
		func(s *gossipv1.CapacitySummary) { s.Models[1].QueueDepth = 9 },
		func(s *gossipv1.CapacitySummary) { s.Models[2].Adapters = s.Models[2].Adapters[1:] },
		func(s *gossipv1.CapacitySummary) { s.Models[0].PrefixSketch, s.PrefixSketch = nil, nil },
		func(s *gossipv1.CapacitySummary) { s.Models[3].Adapters[2].Running = 4 },
	} {
		b, _ := encodeDelta(diffSummary(base, edit(base, 11, change)))
		f.Add(b, uint64(11))
		raw, _ := proto.Marshal(diffSummary(base, edit(base, 12, change)))
		f.Add(append([]byte{codecRaw}, raw...), uint64(12))
		legacy := diffSummary(base, edit(base, 12, change))
		for _, md := range legacy.GetModels() { // as publishers before figure masks sent it
			if md.FigureMask != 0 {
				md.Figures, md.FigureMask, md.FigureValues = modelFigures(base.GetModels()[md.GetIndex()]), 0, nil
			}
		}
		raw, _ = proto.Marshal(legacy)
		f.Add(append([]byte{codecRaw}, raw...), uint64(12))
	}
	f.Add([]byte{codecDeflate}, uint64(1))
	f.Fuzz(func(t *testing.T, b []byte, seq uint64) {
		d, err := decodeDelta(b, "gw", seq, 1<<16)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if d.GetNode() != "gw" || d.GetSequence() != seq || d.GetBaseSequence() == 0 ||
			d.GetSequence() <= d.GetBaseSequence() {
			t.Fatalf("accepted delta %s/%d base %d from chunks of gw/%d", d.GetNode(), d.GetSequence(), d.GetBaseSequence(), seq)
		}
		held := edit(base, d.GetBaseSequence(), func(s *gossipv1.CapacitySummary) { s.Node = d.GetNode() })
		got, err := applyDelta(held, d)
		if err != nil {
			return
		}
		if got.GetSequence() != d.GetSequence() || len(got.GetModels()) != len(held.GetModels()) {
			t.Fatalf(
				"rebuilt %s/%d with %d models from base with %d",
				got.GetNode(),
				got.GetSequence(),
				len(got.GetModels()),
				len(held.GetModels()),
			)
		}
		for i, m := range got.GetModels() {
			if m.GetName() != held.GetModels()[i].GetName() {
				t.Fatalf("model %d renamed %q", i, m.GetName())
			}
		}
	})
}

// BenchmarkDeltaDecodeApply decodes and applies the worst-case delta of a 20 × 10 summary: every
// model's figures changed, no adapter's.
func BenchmarkDeltaDecodeApply(b *testing.B) {
	base := deltaBase(10, 20, 10)
	next := edit(base, 11, func(s *gossipv1.CapacitySummary) {
		for _, m := range s.Models {
			m.QueueDepth, m.Running, m.FreeKvTokens, m.PredictedTtftMs = m.QueueDepth+7, m.Running+7, m.FreeKvTokens+25_000, 96
		}
	})
	blob, err := encodeDelta(diffSummary(base, next))
	if err != nil {
		b.Fatal(err)
	}
	full, _ := EncodeSummary(next)
	b.ReportAllocs()
	for b.Loop() {
		d, err := decodeDelta(blob, "gw", 11, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := applyDelta(base, d); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(blob)), "bytes/delta")
	b.ReportMetric(float64(len(full)), "bytes/full")
}

// modelFigures and adapterFigures copy field by field: every field but the ones a delta carries
// apart must be copied, including fields added to the messages later.
func TestFiguresCopyEveryField(t *testing.T) {
	for _, tt := range []struct {
		msg  proto.Message
		copy func(proto.Message) proto.Message
		skip []protoreflect.FieldDescriptor
	}{
		{&gossipv1.ModelCapacity{}, func(m proto.Message) proto.Message { return modelFigures(m.(*gossipv1.ModelCapacity)) }, modelFigureSkip},
		{&gossipv1.AdapterCapacity{}, func(m proto.Message) proto.Message { return adapterFigures(m.(*gossipv1.AdapterCapacity)) }, adapterSkip},
	} {
		m := tt.msg.ProtoReflect()
		want := m.New()
		fields := m.Descriptor().Fields()
		for i := 0; i < fields.Len(); i++ {
			fd := fields.Get(i)
			v := nonZero(m, fd)
			m.Set(fd, v)
			if !slices.Contains(tt.skip, fd) {
				want.Set(fd, v)
			}
		}
		unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1)
		m.SetUnknown(unknown)
		want.SetUnknown(unknown)
		if got := tt.copy(tt.msg); !proto.Equal(got, want.Interface()) {
			t.Errorf("%s figures:\n got %v\nwant %v", m.Descriptor().Name(), got, want.Interface())
		}
	}
}

// nonZero returns a value of field fd of m that is not the field's zero value.
func nonZero(m protoreflect.Message, fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch {
	case fd.IsList():
		l := m.NewField(fd).List()
		l.Append(l.NewElement())
		return protoreflect.ValueOfList(l)
	case fd.Message() != nil:
		return m.NewField(fd)
	}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("x")
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{1})
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(fd.Number()) + 0.5)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(fd.Number()) + 0.5)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(1)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(fd.Number()))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(fd.Number()))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(fd.Number()))
	}
	return protoreflect.ValueOfUint64(uint64(fd.Number()))
}
