package gossip

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/typepb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Every kind of scalar a mask can name round-trips exactly, extremes, negative zero and NaN
// included; proto3 messages of other packages stand in for the kinds the gossip messages lack.
func TestFigureMaskRoundTrip(t *testing.T) {
	nan := math.Float32frombits(0x7fc00001)
	tests := []struct {
		name string
		b, n proto.Message
	}{
		{
			"model",
			&gossipv1.ModelCapacity{ReadyPods: 4, FreeKvTokens: 9, Saturated: true, PredictedTtftMs: 80},
			&gossipv1.ModelCapacity{
				ReadyPods:       math.MaxUint32,
				TotalKvTokens:   math.MaxUint64,
				Saturation:      0.5,
				PredictedTtftMs: 96,
			},
		},
		{
			"model figures to zero",
			&gossipv1.ModelCapacity{ReadyPods: 4, FreeKvTokens: 9, Saturated: true, DecodeTokensPerSecond: 1},
			&gossipv1.ModelCapacity{},
		},
		{
			"negative zero and NaN",
			&gossipv1.ModelCapacity{Saturation: 1},
			&gossipv1.ModelCapacity{Saturation: float32(math.Copysign(0, -1)), PredictedTtftMs: nan},
		},
		{"infinity", &gossipv1.ModelCapacity{}, &gossipv1.ModelCapacity{PredictedTtftMs: float32(math.Inf(-1))}},
		{"adapter", &gossipv1.AdapterCapacity{ResidentPods: 1}, &gossipv1.AdapterCapacity{QueueDepth: 3, Running: 2}},
		{
			"int64 and int32",
			&durationpb.Duration{Seconds: 5},
			&durationpb.Duration{Seconds: math.MinInt64, Nanos: math.MinInt32},
		},
		{
			"int64 and int32 maxima",
			&durationpb.Duration{},
			&durationpb.Duration{Seconds: math.MaxInt64, Nanos: math.MaxInt32},
		},
		{"double", wrapperspb.Double(1), wrapperspb.Double(-math.MaxFloat64)},
		{"double to zero", wrapperspb.Double(1), wrapperspb.Double(0)},
		{"float", wrapperspb.Float(1), wrapperspb.Float(math.SmallestNonzeroFloat32)},
		{
			"enums, int32 and bool",
			&typepb.Field{Kind: typepb.Field_TYPE_STRING, Number: -3},
			&typepb.Field{
				Kind:        typepb.Field_TYPE_SINT64,
				Cardinality: typepb.Field_CARDINALITY_REPEATED,
				Number:      7,
				Packed:      true,
			},
		},
		{"unknown enum value", &typepb.Field{}, &typepb.Field{Kind: typepb.Field_Kind(-77)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFigureSet(tt.b.ProtoReflect().Descriptor(), nil)
			mask, values, ok := fs.diff(tt.b.ProtoReflect(), tt.n.ProtoReflect())
			if !ok || mask == 0 {
				t.Fatalf("diff: mask %b ok %v, want a mask", mask, ok)
			}
			got := proto.Clone(tt.b)
			if err := fs.apply(got, mask, values); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, tt.n) {
				t.Errorf("rebuilt %v, want %v", got, tt.n)
			}
		})
	}
}

// Property: random figures of models and adapters round-trip, in a mask of at most the changed
// fields.
func TestFigureMaskRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	fs := newFigureSet(modelFields.ByName("name").ContainingMessage(), modelFigureSkip)
	for i := 0; i < 2000; i++ {
		b, n := randomModel(r), randomModel(r)
		mask, values, ok := fs.diff(b.ProtoReflect(), n.ProtoReflect())
		if !ok {
			t.Fatal("no mask for a change of figures")
		}
		got := proto.Clone(b).(*gossipv1.ModelCapacity)
		if err := fs.apply(got, mask, values); err != nil {
			t.Fatal(err)
		}
		got.Name, got.Adapters = n.Name, n.Adapters
		if !proto.Equal(got, n) {
			t.Fatalf("rebuilt %v, want %v", got, n)
		}
	}
}

// randomModel returns a model whose figures are each, at random, zero, small or any value.
func randomModel(r *rand.Rand) *gossipv1.ModelCapacity {
	u32 := func() uint32 { return [...]uint32{0, uint32(r.IntN(40)), r.Uint32()}[r.IntN(3)] }
	f32 := func() float32 {
		return [...]float32{0, float32(r.IntN(500)), math.Float32frombits(r.Uint32())}[r.IntN(3)]
	}
	return &gossipv1.ModelCapacity{
		Name:                   "m",
		ReadyPods:              u32(),
		TotalKvTokens:          r.Uint64() >> r.IntN(64),
		FreeKvTokens:           uint64(u32()),
		QueueDepth:             u32(),
		Running:                u32(),
		Saturation:             f32(),
		Saturated:              r.IntN(2) == 0,
		PredictedTtftMs:        f32(),
		PrefillTokensPerSecond: f32(),
		DecodeTokensPerSecond:  f32(),
	}
}

func TestFigureMaskNotPossible(t *testing.T) {
	fs := newFigureSet((&typepb.Field{}).ProtoReflect().Descriptor(), nil)
	b := &typepb.Field{Name: "a"}
	for name, n := range map[string]*typepb.Field{
		"string changed":   {Name: "b"},
		"repeated changed": {Name: "a", Options: []*typepb.Option{{Name: "o"}}},
	} {
		if _, _, ok := fs.diff(b.ProtoReflect(), n.ProtoReflect()); ok {
			t.Errorf("%s: a mask, want none", name)
		}
	}
	models := newFigureSet(modelFields.ByName("name").ContainingMessage(), modelFigureSkip)
	m := &gossipv1.ModelCapacity{QueueDepth: 1}
	m.ProtoReflect().SetUnknown([]byte{0xf8, 0x06, 0x01}) // field 99 = 1
	if _, _, ok := models.diff((&gossipv1.ModelCapacity{}).ProtoReflect(), m.ProtoReflect()); ok {
		t.Error("unknown fields changed: a mask, want none")
	}
}

func TestFigureMaskApplyRejects(t *testing.T) {
	bit := func(n protoreflect.FieldNumber) uint64 { return 1 << (n - 1) }
	model := newFigureSet(modelFields.ByName("name").ContainingMessage(), modelFigureSkip)
	field := newFigureSet((&typepb.Field{}).ProtoReflect().Descriptor(), nil)
	tests := []struct {
		name   string
		fs     figureSet
		msg    proto.Message
		mask   uint64
		values []uint64
	}{
		{"fewer values than bits", model, &gossipv1.ModelCapacity{}, bit(2) | bit(3), []uint64{1}},
		{"more values than bits", model, &gossipv1.ModelCapacity{}, bit(2), []uint64{1, 2}},
		{"values without a mask", model, &gossipv1.ModelCapacity{}, 0, []uint64{1}},
		{"field the message lacks", model, &gossipv1.ModelCapacity{}, bit(40), []uint64{1}},
		{"highest bit", model, &gossipv1.ModelCapacity{}, 1 << 63, []uint64{1}},
		{"name", model, &gossipv1.ModelCapacity{}, bit(1), []uint64{1}},
		{"adapters", model, &gossipv1.ModelCapacity{}, bit(12), []uint64{1}},
		{"sketch", model, &gossipv1.ModelCapacity{}, bit(13), []uint64{1}},
		{"uint32 out of range", model, &gossipv1.ModelCapacity{}, bit(2), []uint64{1 << 32}},
		{"bool out of range", model, &gossipv1.ModelCapacity{}, bit(8), []uint64{2}},
		{"float out of range", model, &gossipv1.ModelCapacity{}, bit(9), []uint64{1 << 32}},
		{
			"int32 out of range",
			newFigureSet((&durationpb.Duration{}).ProtoReflect().Descriptor(), nil),
			&durationpb.Duration{},
			bit(2),
			[]uint64{zigzag(math.MaxInt32 + 1)},
		},
		{"enum out of range", field, &typepb.Field{}, bit(1), []uint64{zigzag(math.MinInt32 - 1)}},
		{"string", field, &typepb.Field{}, bit(4), []uint64{1}},
		{"repeated", field, &typepb.Field{}, bit(9), []uint64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.fs.apply(tt.msg, tt.mask, tt.values); !errors.Is(err, ErrMalformed) {
				t.Errorf("err = %v, want ErrMalformed", err)
			}
		})
	}
}
