package weightedroundrobin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/weightedroundrobin"
)

func newPicker(t testing.TB, params string, h framework.Handle) framework.Picker {
	t.Helper()
	p, err := weightedroundrobin.Factory("wrr", json.RawMessage(params), h)
	if err != nil {
		t.Fatal(err)
	}
	return p.(framework.Picker)
}

// picks returns the first choices of n picks over eps, and the targets of the first pick.
func picks(p framework.Picker, eps []framework.Endpoint, n int) (firsts, first string) {
	var b strings.Builder
	for i := range n {
		// Scores are ignored: the candidates always arrive with the last one scored highest.
		scores := make([]float64, len(eps))
		scores[len(eps)-1] = 9
		res := p.Pick(context.Background(), &framework.CycleState{}, &framework.Request{}, plugintest.Scored(eps, scores...))
		if i == 0 {
			first = plugintest.Targets(res)
		}
		b.WriteString(res.Targets[0].Meta().Address)
	}
	return b.String(), first
}

func TestSmoothWeightedRotation(t *testing.T) {
	tests := []struct {
		name       string
		weights    []float64
		n          int
		want       string // first choices
		wantFirst  string // the first pick's targets: chosen, then fallbacks by current value
		wantParams string
	}{
		{"equal weights rotate like round robin", []float64{1, 1, 1}, 7, "abcabca", "abc", ""},
		{"nginx's example 5:1:1", []float64{5, 1, 1}, 14, "aabacaaaabacaa", "abc", ""},
		{"interleaved, not in runs", []float64{3, 2}, 10, "ababaababa", "ab", ""},
		{"fractional capacities", []float64{1.5, 0.5}, 8, "aabaaaba", "ab", ""},
		{"heaviest first", []float64{1, 4}, 5, "bbabb", "ba", ""},
		{"one fallback", []float64{2, 1, 1}, 4, "abca", "ab", `{"maxNumOfEndpoints": 2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eps := plugintest.Endpoints(plugintest.WeightedEndpoints(tt.weights...)...)
			got, first := picks(newPicker(t, tt.wantParams, nil), eps, tt.n)
			if got != tt.want || first != tt.wantFirst {
				t.Fatalf("rotation %q (first targets %q), want %q (%q)", got, first, tt.want, tt.wantFirst)
			}
		})
	}
}

// TestCapacityShares checks that over many picks each pod gets its weight's share exactly (to
// one pick), with weights like the mixed fleet's measured capacities.
func TestCapacityShares(t *testing.T) {
	weights := []float64{15.75, 15.75, 1.23, 1.23}
	eps := plugintest.Endpoints(plugintest.WeightedEndpoints(weights...)...)
	p := newPicker(t, "", nil)
	const n = 3396 // 100 × the total weight 33.96
	counts := map[string]int{}
	for range n {
		res := p.Pick(context.Background(), &framework.CycleState{}, &framework.Request{}, plugintest.Scored(eps, 0, 0, 0, 0))
		counts[res.Targets[0].Meta().Address]++
	}
	for i, w := range weights {
		addr := eps[i].Meta().Address
		if want := 100 * w; float64(counts[addr]) < want-1 || float64(counts[addr]) > want+1 {
			t.Fatalf("%s picked %d times of %d, want %.0f (counts %v)", addr, counts[addr], n, want, counts)
		}
	}
}

// TestCandidatesChange checks that only the candidates of a decision take part in its rotation
// (a pod ejected or filtered out is skipped), and that endpoints leaving the set drop their
// state.
func TestCandidatesChange(t *testing.T) {
	all := plugintest.WeightedEndpoints(1, 1, 1)
	h := plugintest.NewHandle(plugintest.Endpoints(all...)...)
	p := newPicker(t, "", h)
	if got, _ := picks(p, plugintest.Endpoints(all[0], all[1]), 4); got != "abab" {
		t.Fatalf("over a and b: %q, want abab", got)
	}
	if got, _ := picks(p, plugintest.Endpoints(all...), 3); got != "abc" {
		t.Fatalf("c back: %q, want abc", got)
	}
	if n := weightedroundrobin.Held(p); n != 3 {
		t.Fatalf("state held for %d endpoints, want 3", n)
	}
	h.Remove("c")
	if n := weightedroundrobin.Held(p); n != 2 {
		t.Fatalf("state held for %d endpoints after c left, want 2", n)
	}
	res := p.Pick(context.Background(), &framework.CycleState{}, &framework.Request{}, nil)
	if len(res.Targets) != 0 {
		t.Fatal("targets from no candidates")
	}
}

func TestUnlabelledPodsWeighOne(t *testing.T) {
	eps := []framework.Endpoint{plugintest.NewEndpoint("a"), plugintest.NewEndpoint("b")}
	if got, _ := picks(newPicker(t, "", nil), eps, 4); got != "abab" {
		t.Fatalf("unlabelled pods: %q, want abab", got)
	}
	tabled := []framework.Endpoint{
		plugintest.NewLabeledEndpoint("a", map[string]string{"gpu": "a10g"}),
		plugintest.NewLabeledEndpoint("b", map[string]string{"gpu": "h100"}),
	}
	p := newPicker(t, `{"weightsByLabel": {"label": "gpu", "weights": {"h100": 3, "a10g": 1}}}`, nil)
	if got, _ := picks(p, tabled, 8); got != "babbbabb" {
		t.Fatalf("weights from the GPU table: %q, want babbbabb", got)
	}
}

func TestFactoryRejectsBadParameters(t *testing.T) {
	for _, params := range []string{`{"defaultWeight": -1}`, `{"choiceCount": 2}`,
		`{"weightsByLabel": {"label": "gpu"}}`} {
		if _, err := weightedroundrobin.Factory("wrr", json.RawMessage(params), nil); err == nil {
			t.Errorf("%s accepted", params)
		}
	}
}

func BenchmarkPick(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("endpoints=%d", n), func(b *testing.B) {
			var eps []framework.Endpoint
			for i := range n {
				eps = append(eps, plugintest.NewLabeledEndpoint(fmt.Sprintf("10.0.%d.%d:8000", i/256, i%256),
					map[string]string{framework.DefaultWeightLabel: strconv.Itoa(1 + i%4)}))
			}
			p := newPicker(b, "", nil)
			scored := plugintest.Scored(eps, make([]float64, n)...)
			b.ReportAllocs()
			for b.Loop() {
				p.Pick(context.Background(), &framework.CycleState{}, &framework.Request{}, scored)
			}
		})
	}
}
