package p2c_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/p2c"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

// script returns an intN that replays draws (each must be < n) and fails the test when they run
// out or one is out of range.
func script(t *testing.T, draws ...int) func(int) int {
	return func(n int) int {
		t.Helper()
		if len(draws) == 0 {
			t.Fatal("more draws than scripted")
		}
		d := draws[0]
		draws = draws[1:]
		if d >= n {
			t.Fatalf("scripted draw %d out of [0, %d)", d, n)
		}
		return d
	}
}

func newPicker(t testing.TB, params string, intN func(int) int) *p2c.Picker {
	t.Helper()
	var p p2c.Params
	if err := framework.DecodeParams(json.RawMessage(params), &p); err != nil {
		t.Fatal(err)
	}
	pk, err := p2c.New("p2c", p, intN, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pk
}

// loaded returns endpoints a, b, c, ... with the given requests in flight and weights.
func loaded(inFlight []int64, weights ...float64) []framework.Endpoint {
	if len(weights) == 0 {
		weights = make([]float64, len(inFlight))
		for i := range weights {
			weights[i] = 1
		}
	}
	eps := plugintest.WeightedEndpoints(weights...)
	for i, n := range inFlight {
		eps[i].AddInFlight(n)
	}
	return plugintest.Endpoints(eps...)
}

func pick(p framework.Picker, eps []framework.Endpoint) *framework.Result {
	scores := make([]float64, len(eps))
	if len(scores) > 0 {
		scores[0] = 9 // ignored
	}
	return p.Pick(context.Background(), &framework.CycleState{}, &framework.Request{}, plugintest.Scored(eps, scores...))
}

// TestTwoChoices pins power of two choices on equal weights: two draws with replacement, the
// fewer in flight wins, the first drawn on a tie; fallbacks are drawn likewise among the rest.
func TestTwoChoices(t *testing.T) {
	tests := []struct {
		name     string
		inFlight []int64
		params   string
		draws    []int
		want     string
	}{
		{"second draw has fewer", []int64{3, 0, 1}, `{"maxNumOfEndpoints": 1}`, []int{0, 1}, "b"},
		{"first draw has fewer", []int64{3, 0, 1}, `{"maxNumOfEndpoints": 1}`, []int{1, 0}, "b"},
		{"the least loaded is not drawn", []int64{3, 0, 1}, `{"maxNumOfEndpoints": 1}`, []int{0, 2}, "c"},
		{"same candidate twice", []int64{3, 0, 1}, `{"maxNumOfEndpoints": 1}`, []int{0, 0}, "a"},
		{"tie: first drawn wins", []int64{1, 1, 1}, `{"maxNumOfEndpoints": 1}`, []int{2, 1}, "c"},
		// c (draws c, a), then among what is left, [b a]: draws a, b: b; then a.
		{"fallbacks among the rest", []int64{3, 0, 1}, "", []int{2, 0, 1, 0, 0, 0}, "cba"},
		{"three choices", []int64{3, 2, 1, 0}, `{"maxNumOfEndpoints": 1, "choiceCount": 3}`, []int{0, 1, 2}, "c"},
		{"one choice is random", []int64{0, 9}, `{"maxNumOfEndpoints": 1, "choiceCount": 1}`, []int{1}, "b"},
		{"one candidate", []int64{5}, "", []int{0, 0}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPicker(t, tt.params, script(t, tt.draws...))
			if got := plugintest.Targets(pick(p, loaded(tt.inFlight))); got != tt.want {
				t.Fatalf("targets %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTwoChoicesShares checks the distribution with a seeded source: of four pods with 0, 1, 2
// and 3 in flight, two draws pick the idle one with probability 1-(3/4)² = 7/16 and the busiest
// only when both draws hit it, 1/16.
func TestTwoChoicesShares(t *testing.T) {
	eps := loaded([]int64{0, 1, 2, 3})
	p := newPicker(t, `{"maxNumOfEndpoints": 1}`, rand.New(rand.NewPCG(1, 2)).IntN)
	counts := map[string]int{}
	const n = 16000
	for range n {
		counts[plugintest.Targets(pick(p, eps))]++
	}
	for addr, want := range map[string]int{"a": 7000, "b": 5000, "c": 3000, "d": 1000} {
		if d := counts[addr] - want; d > 300 || d < -300 {
			t.Fatalf("picks %v, want about a 7000, b 5000, c 3000, d 1000", counts)
		}
	}
}

// TestWeightedSchedule pins Envoy's weighted mode: an earliest-deadline-first schedule whose
// weights are scaled by the load at each pick, weight / (in_flight + 1)^activeRequestBias.
func TestWeightedSchedule(t *testing.T) {
	tests := []struct {
		name     string
		weights  []float64
		inFlight []int64
		params   string
		n        int
		want     string
	}{
		// Deadlines a 0.5, b 1: a; a 1 (scheduled after b) b 1: b; a 1: a; a 1.5: a; b 2 ...
		{"idle pods by weight", []float64{2, 1}, []int64{0, 0}, "", 9, "abaabaaba"},
		{"capacity ratio", []float64{4, 1}, []int64{0, 0}, "", 10, "aaabaaaaba"},
		// a's weight 2 over 3 in flight + 1 is 0.5 against b's 1: b twice as often.
		{"load lowers the weight", []float64{2, 1}, []int64{3, 0}, "", 6, "babbab"},
		{"bias 0 ignores load", []float64{2, 1}, []int64{3, 0}, `{"activeRequestBias": 0}`, 6, "abaaba"},
		// bias 2: a 2/16 = 0.125, b 1: b eight times as often.
		{"bias 2", []float64{2, 1}, []int64{3, 0}, `{"activeRequestBias": 2}`, 9, "bbbbbbbab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPicker(t, tt.params, script(t)) // no draws in weighted mode
			eps := loaded(tt.inFlight, tt.weights...)
			var got strings.Builder
			for range tt.n {
				got.WriteString(pick(p, eps).Targets[0].Meta().Address)
			}
			if got.String() != tt.want {
				t.Fatalf("schedule %q, want %q", got.String(), tt.want)
			}
		})
	}
}

// TestWeightedLoadAtPick checks that a pod's weight is scaled by its load at the time it is
// picked: a pod that filled up is scheduled far out, so the idle one takes the next requests.
func TestWeightedLoadAtPick(t *testing.T) {
	eps := plugintest.WeightedEndpoints(4, 1)
	p := newPicker(t, "", nil)
	cands := plugintest.Endpoints(eps...)
	var got strings.Builder
	for range 6 {
		res := pick(p, cands)
		res.Targets[0].(*plugintest.FakeEndpoint).AddInFlight(1) // nothing finishes
		got.WriteString(res.Targets[0].Meta().Address)
	}
	// Deadlines a 0.25, b 1: a, rescheduled at 0.25 + 1/(4/1) = 0.5; a again, now with 1 in
	// flight: 0.5 + 1/(4/2) = 1, after b; b (1 → 2); a with 2: 1 + 3/4 = 1.75; a with 3:
	// 1.75 + 1 = 2.75, after b's 2: b. The heavy pod's next turn recedes with every request it
	// holds.
	if got.String() != "aabaab" {
		t.Fatalf("schedule %q, want aabaab", got.String())
	}
	if got := plugintest.Targets(pick(p, cands)); got != "ab" {
		t.Fatalf("targets %q, want a (2.75) then b (2 + 1/(1/2) = 4)", got)
	}
}

// TestCandidatesReturn checks that a pod left out of the candidates for a while (ejected,
// filtered) rejoins the schedule from its current time instead of taking every request until
// its old deadline is caught up, and that endpoints leaving the set drop their state.
func TestCandidatesReturn(t *testing.T) {
	all := plugintest.WeightedEndpoints(1, 2)
	h := plugintest.NewHandle(plugintest.Endpoints(all...)...)
	raw, err := p2c.Factory("p2c", nil, h)
	if err != nil {
		t.Fatal(err)
	}
	p := raw.(framework.Picker)
	pick(p, plugintest.Endpoints(all...)) // b (deadline 0.5), a waits at 1
	x := plugintest.NewLabeledEndpoint("x", map[string]string{framework.DefaultWeightLabel: "1"})
	for range 20 { // b with another pod: the schedule's time moves well past a's deadline
		pick(p, plugintest.Endpoints(all[1], x))
	}
	var got strings.Builder
	for range 3 {
		got.WriteString(pick(p, plugintest.Endpoints(all...)).Targets[0].Meta().Address)
	}
	if s := got.String(); strings.Count(s, "a") > 1 {
		t.Fatalf("a back from absence got %q, want at most its share (one in three)", s)
	}
	if n := p2c.Held(p); n != 3 {
		t.Fatalf("state for %d endpoints, want 3", n)
	}
	h.Remove("a")
	if n := p2c.Held(p); n != 1 {
		t.Fatalf("state for %d endpoints after a left, want 1 (only b is in the set)", n)
	}
}

func TestFactoryRejectsBadParameters(t *testing.T) {
	for _, params := range []string{`{"choiceCount": -1}`, `{"choiceCount": 101}`, `{"activeRequestBias": -0.5}`, `{"activeRequestBias": 1000}`,
		`{"defaultWeight": -1}`, `{"slowStart": true}`} {
		if _, err := p2c.Factory("p2c", json.RawMessage(params), nil); err == nil {
			t.Errorf("%s accepted", params)
		}
	}
	if res := pick(newPicker(t, "", nil), nil); len(res.Targets) != 0 {
		t.Fatal("targets from no candidates")
	}
}

func BenchmarkPick(b *testing.B) {
	for _, weighted := range []bool{false, true} {
		for _, n := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("weighted=%v/endpoints=%d", weighted, n), func(b *testing.B) {
				var eps []framework.Endpoint
				for i := range n {
					w := "1"
					if weighted {
						w = fmt.Sprint(1 + i%4)
					}
					e := plugintest.NewLabeledEndpoint(
						fmt.Sprintf("10.0.%d.%d:8000", i/256, i%256),
						map[string]string{framework.DefaultWeightLabel: w},
					)
					e.AddInFlight(int64(i % 7))
					eps = append(eps, e)
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
}
