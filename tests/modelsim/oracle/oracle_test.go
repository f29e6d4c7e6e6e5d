package oracle_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/oracle"
)

// smallMixed returns a short mixed-fleet sequence sized for one h100 and one a10g.
func smallMixed(t testing.TB, rate float64, d time.Duration) (*workload.Workload, []workload.Request) {
	t.Helper()
	w, err := workload.Load("mixed-fleet")
	if err != nil {
		t.Fatal(err)
	}
	if w, err = w.WithRate(rate); err != nil {
		t.Fatal(err)
	}
	if w, err = w.WithDuration(d); err != nil {
		t.Fatal(err)
	}
	reqs, err := workload.Generate(w, w.Seed)
	if err != nil {
		t.Fatal(err)
	}
	return w, reqs
}

func replay(t testing.TB, cfg oracle.Config, w *workload.Workload, reqs []workload.Request) oracle.Summary {
	t.Helper()
	rep, err := oracle.Replay(context.Background(), cfg, w, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Requests) != len(reqs) {
		t.Fatalf("%d results for %d requests", len(rep.Requests), len(reqs))
	}
	for _, r := range rep.Requests {
		if r.TTFT <= 0 || r.E2E < r.TTFT || r.OutputTokens != reqs[r.Index].MaxTokens {
			t.Fatalf("request %d: %+v", r.Index, r)
		}
	}
	return rep.Summary()
}

func TestOracleIsALowerBound(t *testing.T) {
	t.Parallel() // a pure simulation (seconds of CPU, no shared state): runs beside the others
	w, reqs := smallMixed(t, 18, 10*time.Second)
	if len(reqs) < 40 {
		t.Fatalf("only %d requests", len(reqs))
	}
	fleet := []string{"h100", "a10g"}
	base := oracle.DefaultConfig()
	base.Profiles = fleet
	got := replay(t, base, w, reqs)
	baselines := map[string]func(i int) int{
		"always-h100": func(int) int { return 0 },
		"always-a10g": func(int) int { return 1 },
		"round-robin": func(i int) int { return i % 2 },
	}
	for name, assign := range baselines {
		cfg := base
		cfg.Assign = assign
		b := replay(t, cfg, w, reqs)
		t.Logf("%s: TTFT p50 %v p95 %v p99 %v mean %v (oracle: %v %v %v %v)", name,
			b.TTFT.P50, b.TTFT.P95, b.TTFT.P99, b.TTFT.Mean, got.TTFT.P50, got.TTFT.P95, got.TTFT.P99, got.TTFT.Mean)
		if got.TTFT.P50 > b.TTFT.P50 || got.TTFT.P95 > b.TTFT.P95 || got.TTFT.P99 > b.TTFT.P99 ||
			got.TTFT.Mean > b.TTFT.Mean {
			t.Errorf("oracle TTFT %+v above %s's %+v", got.TTFT, name, b.TTFT)
		}
	}
	// Above one h100's capacity (~16 req/s of this shape) the oracle must use the a10g too.
	if got.Share[0] <= got.Share[1] || got.Share[1] == 0 {
		t.Errorf("oracle sent %.2f to the h100 and %.2f to the a10g, want most but not all on the h100",
			got.Share[0], got.Share[1])
	}
}

func TestReplayDeterministic(t *testing.T) {
	w, reqs := smallMixed(t, 8, 5*time.Second)
	cfg := oracle.DefaultConfig()
	cfg.Profiles = []string{"h100", "a10g", "h100"}
	run := func() *oracle.Report {
		rep, err := oracle.Replay(context.Background(), cfg, w, reqs)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	a, b := run(), run()
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two replays of the same sequence differ")
	}
	if s := a.Summary(); s.Share[1] == 1 {
		t.Fatalf("every request on the a10g: %+v", s)
	}
}

func TestReplayErrors(t *testing.T) {
	w, reqs := smallMixed(t, 8, 2*time.Second)
	huge := []workload.Request{
		{Endpoint: workload.Chat, Model: w.Model, Prompt: strings.Repeat("abcd", 40000), MaxTokens: 10},
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		fleet   []string
		assign  func(int) int
		reqs    []workload.Request
		wantErr error  // checked with errors.Is when set
		wantMsg string // else a substring
	}{
		{"fits no pod", context.Background(), []string{"a10g", "a10g"}, nil, huge, oracle.ErrNoPod, ""},
		{
			"assigned pod out of range",
			context.Background(),
			[]string{"h100"},
			func(int) int { return 1 },
			reqs,
			nil,
			"out of range",
		},
		{"cancelled", cancelled, []string{"h100"}, nil, reqs, context.Canceled, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := oracle.DefaultConfig()
			cfg.Profiles, cfg.Assign = tt.fleet, tt.assign
			_, err := oracle.Replay(tt.ctx, cfg, w, tt.reqs)
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) ||
				tt.wantErr == nil && (err == nil || !strings.Contains(err.Error(), tt.wantMsg)) {
				t.Fatalf("error %v, want %v %q", err, tt.wantErr, tt.wantMsg)
			}
		})
	}
}

func TestPredictionExactWhenNothingFollows(t *testing.T) {
	// A request's first token predicted on a clone must be the one the pod then produces, whenever
	// no later request reaches that pod before it: nothing else can change the pod's course.
	w, reqs := smallMixed(t, 18, 10*time.Second)
	cfg := oracle.DefaultConfig()
	cfg.Profiles = []string{"h100", "a10g"}
	rep, err := oracle.Replay(context.Background(), cfg, w, reqs)
	if err != nil {
		t.Fatal(err)
	}
	const overhead = 3 * time.Millisecond // every profile's API overhead
	checked := 0
	for i, r := range rep.Requests {
		alone := true
		for _, next := range rep.Requests[i+1:] {
			if next.Pod == r.Pod && next.At+overhead < r.At+r.PredictedTTFT {
				alone = false
				break
			}
		}
		if !alone {
			continue
		}
		checked++
		if r.TTFT != r.PredictedTTFT {
			t.Errorf("request %d on pod %d: TTFT %v, predicted %v", r.Index, r.Pod, r.TTFT, r.PredictedTTFT)
		}
	}
	if checked < 20 {
		t.Fatalf("only %d of %d requests had their first token before the next arrival", checked, len(reqs))
	}
}

// With Compare a fixed placement is also simulated on every pod at each decision: the assigned
// pod's prediction is the one among the candidates, the oracle's own choice at that moment is
// the least of them, and the replay itself is the same as without Compare.
func TestCompareReportsEveryPodsFirstToken(t *testing.T) {
	t.Parallel() // a pure simulation (seconds of CPU, no shared state): runs beside the others
	w, reqs := smallMixed(t, 18, 10*time.Second)
	cfg := oracle.DefaultConfig()
	cfg.Profiles, cfg.Assign = []string{"h100", "a10g"}, func(int) int { return 1 } // everything on the slow pod
	plain, err := oracle.Replay(context.Background(), cfg, w, reqs)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Compare = true
	rep, err := oracle.Replay(context.Background(), cfg, w, reqs)
	if err != nil {
		t.Fatal(err)
	}
	sooner := 0
	for i, r := range rep.Requests {
		if r.TTFT != plain.Requests[i].TTFT || plain.Requests[i].Candidates != nil {
			t.Fatalf(
				"request %d: Compare changed the replay (%v, %v) or candidates without it",
				r.Index,
				r.TTFT,
				plain.Requests[i].TTFT,
			)
		}
		if len(r.Candidates) != 2 || r.PredictedTTFT != r.Candidates[1] || r.Candidates[0] <= 0 {
			t.Fatalf("request %d: candidates %v, predicted %v", r.Index, r.Candidates, r.PredictedTTFT)
		}
		if r.Candidates[0] < r.Candidates[1] {
			sooner++
		}
	}
	// An h100 prefills ten times as fast as an a10g: the idle h100 is the sooner pod almost always.
	if sooner < len(reqs)*9/10 {
		t.Fatalf("the h100 was sooner for %d of %d requests", sooner, len(reqs))
	}
	// A pod out of a request's reach is -1.
	cfg.Network = func(r *workload.Request, pod int) (time.Duration, bool) { return 0, pod == 1 }
	rep, err = oracle.Replay(context.Background(), cfg, w, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Requests[0].Candidates; c[0] != -1 || c[1] <= 0 {
		t.Fatalf("candidates with the h100 out of reach: %v", c)
	}
}
