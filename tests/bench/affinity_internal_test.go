package bench

import (
	"math"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// TestGroupAffinity places the repeats of a two-group sequence by hand: a repeat on a pod that
// served its group is kept (a hit when it found half its system prompt cached), one elsewhere is
// moved, a failed request counts for nothing, and the ceiling credits each repeat with its
// group's system prompt in full blocks.
func TestGroupAffinity(t *testing.T) {
	w := &workload.Workload{SharedPrefix: &workload.SharedPrefix{
		Groups: 2, PromptsPerGroup: 50, SystemTokens: 160, QuestionTokens: 40,
	}}
	const seed = 9
	gen := workload.NewGenerator(w, seed)
	var g0, g1 []int // request indices by group, distinct questions
	asked := map[string]bool{}
	for i := 0; len(g0) < 4 || len(g1) < 1; i++ {
		r := gen.Request(i)
		if asked[r.Prompt] {
			continue
		}
		asked[r.Prompt] = true
		if r.Group == 0 && len(g0) < 4 {
			g0 = append(g0, i)
		} else if r.Group == 1 && len(g1) < 1 {
			g1 = append(g1, i)
		}
	}
	sys := len(gen.Request(g0[0]).System) / workload.CharsPerToken
	sample := func(idx int, at time.Duration, pod string, cached int, failed bool) loadgen.Sample {
		s := loadgen.Sample{Index: idx, Sent: at, Endpoint: pod, PromptTokens: 200, CachedTokens: cached}
		if failed {
			s.Error = loadgen.ErrHTTP5xx
		}
		return s
	}
	res := &loadgen.Result{Seed: seed, Targets: []loadgen.TargetResult{{Name: "p", Samples: []loadgen.Sample{
		sample(g0[2], 3*time.Second, "a", sys, false), // kept, hit
		sample(g0[0], 1*time.Second, "a", 0, false),   // first of group 0
		sample(g1[0], 2*time.Second, "b", 0, false),   // first of group 1
		sample(g0[1], 4*time.Second, "b", 0, false),   // moved, miss
		sample(g0[3], 5*time.Second, "a", 0, true),    // failed: ignored
	}}}}
	got := groupAffinity(w, res)
	if len(got) != 1 {
		t.Fatalf("got %d figures, want 1", len(got))
	}
	a := got[0]
	want := GroupAffinity{Policy: "p", Repeats: 2, Kept: 1, KeptHits: 1, Moved: 1}
	ceiling := a.Ceiling
	a.Ceiling = 0
	if a != want {
		t.Errorf("got %+v, want %+v", a, want)
	}
	if wantC := float64(2*(sys/16*16)) / 800; math.Abs(ceiling-wantC) > 1e-9 {
		t.Errorf("ceiling %v, want %v", ceiling, wantC)
	}
	if groupAffinity(&workload.Workload{}, res) != nil {
		t.Error("figures for a workload without shared-prefix groups")
	}
}

// TestPreciseDecision reads the precise-prefix-cache-scorer's decisions counter into the keys
// the per-pod table shows.
func TestPreciseDecision(t *testing.T) {
	tests := []struct {
		rest, key string
		v         float64
		ok        bool
	}{
		{`mode="precise",reason="matched"} 140`, "prefix_precise", 140, true},
		{`mode="approximate",reason="tokenizer_backoff"} 3`, "prefix_approximate_tokenizer_backoff", 3, true},
		{`reason="matched"} 1`, "", 0, false},
		{`mode="precise",reason="matched"} x`, "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.rest, func(t *testing.T) {
			key, v, ok := preciseDecision(tt.rest)
			if key != tt.key || v != tt.v || ok != tt.ok {
				t.Errorf("preciseDecision(%q) = %q, %v, %v; want %q, %v, %v", tt.rest, key, v, ok, tt.key, tt.v, tt.ok)
			}
		})
	}
}
