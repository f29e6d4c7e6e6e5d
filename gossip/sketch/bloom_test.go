package sketch_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-dev/switchyard/gossip/prefix"
	"github.com/switchyard-dev/switchyard/gossip/sketch"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

func TestFalsePositiveRateNearDesign(t *testing.T) {
	tests := []struct {
		name  string
		items int
		rate  float64
	}{
		{"1k at 1%", 1000, 0.01},
		{"4k at 2%", 4096, 0.02},
		{"2k at 5%", 2048, 0.05},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tt.items)))
			b, err := sketch.NewForCapacity(tt.items, tt.rate, 42)
			if err != nil {
				t.Fatal(err)
			}
			added := make(map[uint64]bool, tt.items)
			for len(added) < tt.items {
				h := rng.Uint64()
				added[h] = true
				b.Add(h)
			}
			for h := range added {
				if !b.Contains(h) {
					t.Fatalf("false negative for %x", h)
				}
			}
			const probes = 200000
			fp := 0
			for i := 0; i < probes; i++ {
				h := rng.Uint64()
				if !added[h] && b.Contains(h) {
					fp++
				}
			}
			got := float64(fp) / probes
			if got > tt.rate*1.5 || got < tt.rate*0.5 {
				t.Errorf("false-positive rate %.4f, designed %.4f", got, tt.rate)
			}
			if est := b.EstimatedFalsePositiveRate(); est > tt.rate*1.5 || est < tt.rate*0.5 {
				t.Errorf("estimated rate %.4f, designed %.4f", est, tt.rate)
			}
		})
	}
}

func TestProtoRoundTripAndLongestPrefix(t *testing.T) {
	b, err := sketch.NewForCapacity(512, 0.01, 7)
	if err != nil {
		t.Fatal(err)
	}
	prompt := make([]byte, 10*prefix.BlockSize)
	for i := range prompt {
		prompt[i] = byte('a' + i%26)
	}
	chain := prefix.Hashes(nil, "llama", prompt, 0)
	for _, h := range chain[:6] {
		b.Add(h)
	}
	got, err := sketch.FromProto(b.Proto())
	if err != nil {
		t.Fatal(err)
	}
	if n := got.LongestPrefix(chain); n != 6 {
		t.Errorf("LongestPrefix = %d, want 6", n)
	}
	other := prefix.Hashes(nil, "mistral", prompt, 0)
	if n := got.LongestPrefix(other); n != 0 {
		t.Errorf("LongestPrefix for another model = %d, want 0", n)
	}
	if got.Len() != 6 || got.Bits() != b.Bits() || got.Hashes() != b.Hashes() {
		t.Errorf("decoded filter differs: len %d bits %d hashes %d", got.Len(), got.Bits(), got.Hashes())
	}
	got.Reset()
	if got.Contains(chain[0]) || got.Len() != 0 {
		t.Error("Reset left items behind")
	}
}

func TestFromProtoRejectsInvalid(t *testing.T) {
	tests := []struct {
		name string
		msg  *gossipv1.PrefixSketch
	}{
		{"nil", nil},
		{"zero bits", &gossipv1.PrefixSketch{NumHashes: 3}},
		{"bits not whole bytes", &gossipv1.PrefixSketch{NumBits: 12, NumHashes: 3, Bits: make([]byte, 2)}},
		{"too many bits", &gossipv1.PrefixSketch{NumBits: sketch.MaxBits + 8, NumHashes: 3}},
		{"zero hashes", &gossipv1.PrefixSketch{NumBits: 64, Bits: make([]byte, 8)}},
		{"too many hashes", &gossipv1.PrefixSketch{NumBits: 64, NumHashes: 33, Bits: make([]byte, 8)}},
		{"short bits", &gossipv1.PrefixSketch{NumBits: 64, NumHashes: 3, Bits: make([]byte, 7)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := sketch.FromProto(tt.msg); !errors.Is(err, sketch.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestNewRejectsBadSizes(t *testing.T) {
	if _, err := sketch.New(0, 3, 0); err == nil {
		t.Error("New(0 bits) succeeded")
	}
	if _, err := sketch.New(64, 0, 0); err == nil {
		t.Error("New(0 hashes) succeeded")
	}
	if _, err := sketch.NewForCapacity(10, 1.5, 0); err == nil {
		t.Error("NewForCapacity(rate 1.5) succeeded")
	}
}

func BenchmarkContains(b *testing.B) {
	f, _ := sketch.NewForCapacity(4096, 0.01, 1)
	for i := uint64(0); i < 4096; i++ {
		f.Add(i * 0x9e3779b97f4a7c15)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		f.Contains(uint64(i))
	}
}
