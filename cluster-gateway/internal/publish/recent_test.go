package publish_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/publish"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
	"github.com/switchyard-dev/switchyard/gossip/sketch"
)

func seq(from, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(from + i)
	}
	return out
}

func TestRecentPrefixes(t *testing.T) {
	tests := []struct {
		name                 string
		capacity, perRequest int
		record               [][]uint64 // model "m", in order
		max                  int
		wantLen              int
		wantHas, wantNot     []uint64
	}{
		{"all kept under capacity", 100, 0, [][]uint64{seq(0, 10), seq(5, 10)}, 100, 15, seq(0, 15), nil},
		{"max bounds the answer", 100, 0, [][]uint64{seq(0, 30)}, 8, 8, nil, nil},
		{"leading blocks per request", 100, 10, [][]uint64{seq(0, 1000)}, 100, 10, seq(0, 10), []uint64{10, 999}},
		{
			"oldest forgotten beyond capacity",
			40,
			0,
			[][]uint64{seq(0, 20), seq(100, 20), seq(200, 20)},
			100,
			40,
			seq(100, 20),
			seq(0, 20),
		},
		{"a long prompt keeps its head", 10, 0, [][]uint64{seq(0, 30)}, 100, 10, seq(0, 5), seq(20, 10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := publish.NewRecentPrefixes(tt.capacity, tt.perRequest)
			for _, h := range tt.record {
				r.Record("m", h)
			}
			got := r.HotPrefixes("m", tt.max)
			if len(got) != tt.wantLen {
				t.Fatalf("HotPrefixes returned %d hashes, want %d: %v", len(got), tt.wantLen, got)
			}
			for _, h := range tt.wantHas {
				if !slices.Contains(got, h) {
					t.Errorf("hash %d missing", h)
				}
			}
			for _, h := range tt.wantNot {
				if slices.Contains(got, h) {
					t.Errorf("hash %d kept", h)
				}
			}
			if other := r.HotPrefixes("other", tt.max); other != nil {
				t.Errorf("unrecorded model has hashes %v", other)
			}
		})
	}
}

// The sketch a publisher builds from routed prompts lets a router find the prompt's cached prefix
// with the shared hashing contract: all blocks of a routed prompt, none of an unrelated one.
func TestSketchOfRoutedPrompts(t *testing.T) {
	clk := newClock()
	rec := publish.NewRecentPrefixes(publish.DefaultConfig().MaxHotPrefixes, 0)
	system := []byte(fmt.Sprintf("%0640d", 7)) // 10 blocks
	routed := prefix.Hashes(
		nil,
		"m",
		append(system, "first question, long enough for one block of sixty-four bytes."...),
		0,
	)
	rec.Record("m", routed)
	p, err := publish.New(
		publish.DefaultConfig(),
		newView(t, clk.Now(), podSpec{base: "m", m: kv(0, 0, 0)}).View(),
		&recordingSink{},
		publish.Options{Now: clk.Now, Prefixes: rec},
	)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sketch.FromProto(p.Build().GetModels()[0].GetPrefixSketch())
	if err != nil {
		t.Fatal(err)
	}
	if n := b.LongestPrefix(routed); n != len(routed) {
		t.Errorf("routed prompt: %d of %d blocks found", n, len(routed))
	}
	sameSystem := prefix.Hashes(
		nil,
		"m",
		append(system, "a different question of at least sixty-four bytes, not routed."...),
		0,
	)
	if n := b.LongestPrefix(sameSystem); n != 10 {
		t.Errorf("prompt sharing the system prompt: %d blocks found, want the 10 shared", n)
	}
	if n := b.LongestPrefix(prefix.Hashes(nil, "other-model", system, 0)); n != 0 {
		t.Errorf("another model's chain: %d blocks found, want 0", n)
	}
}

func TestRecentPrefixesConcurrent(t *testing.T) {
	r := publish.NewRecentPrefixes(64, 0)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				r.Record(fmt.Sprintf("m%d", w%2), seq(i*10, 20))
				if got := r.HotPrefixes("m0", 1000); len(got) > 64 {
					t.Errorf("%d hashes kept, capacity 64", len(got))
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkRecentPrefixesRecord(b *testing.B) {
	r := publish.NewRecentPrefixes(1024, 0)
	prompts := make([][]uint64, 64)
	for i := range prompts {
		prompts[i] = seq(i*97, 256)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.Record("m", prompts[i%len(prompts)])
		i++
	}
}
