package workload_test

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

func mustParse(t *testing.T, src string) *workload.Workload {
	t.Helper()
	w, err := workload.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return w
}

func mustGenerate(t *testing.T, w *workload.Workload, seed uint64) []workload.Request {
	t.Helper()
	reqs, err := workload.Generate(w, seed)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	return reqs
}

func TestEmbeddedWorkloadsLoadAndValidate(t *testing.T) {
	want := []string{
		"bursty",
		"cluster-loss",
		"long-prompt",
		"mixed-fleet",
		"multi-lora",
		"region-burst",
		"region-burst-overload",
		"shared-prefix",
		"trace-azure-conv",
		"trace-conversation",
		"uniform-steady",
	}
	if got := workload.Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, name := range want {
		t.Run(name, func(t *testing.T) {
			w, err := workload.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			if w.Name != name || w.Description == "" || w.Seed == 0 {
				t.Errorf("name %q, description %q, seed %d", w.Name, w.Description, w.Seed)
			}
			if err := w.Validate(); err != nil {
				t.Errorf("validate: %v", err)
			}
			short, _ := w.WithDuration(5 * time.Second)
			if w.IsTrace() {
				// The traces are not in the repository: replay the synthetic one of the format.
				file := map[string]string{"mooncake": "mooncake.jsonl", "azure": "azure.csv"}[string(w.Trace.Format)]
				if !strings.HasPrefix(w.Trace.Path, "../shared/traces/") || w.SLO == nil || w.Endpoint != workload.Completions {
					t.Errorf("trace %+v, slo %v, endpoint %s", w.Trace, w.SLO, w.Endpoint)
				}
				short, _ = short.WithTrace(func(tr *workload.Trace) { tr.Path, tr.Start = testdata(t, file), 0 })
			}
			if reqs := mustGenerate(t, short, w.Seed); len(reqs) == 0 {
				t.Error("no requests in 5 s")
			}
		})
	}
}

func TestLoadUnknownName(t *testing.T) {
	_, err := workload.Load("no-such-workload")
	if err == nil || !strings.Contains(err.Error(), "mixed-fleet") {
		t.Fatalf("err = %v, want the list of embedded names", err)
	}
}

func TestGenerateDeterministic(t *testing.T) {
	w, err := workload.Load("mixed-fleet")
	if err != nil {
		t.Fatal(err)
	}
	w, _ = w.WithDuration(10 * time.Second)
	a, b := mustGenerate(t, w, 42), mustGenerate(t, w, 42)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed gave different sequences")
	}
	c := mustGenerate(t, w, 43)
	if len(a) == len(c) && a[0].At == c[0].At && a[0].Prompt == c[0].Prompt {
		t.Fatal("different seeds gave the same sequence")
	}
	firstBlocks := map[string]bool{}
	for _, r := range a {
		firstBlocks[r.Prompt[:64]] = true
	}
	if len(firstBlocks) != len(a) {
		t.Errorf(
			"%d distinct first 64-byte blocks among %d prompts: prompts share prefixes by accident",
			len(firstBlocks),
			len(a),
		)
	}
	for i, r := range a {
		if r.Index != i || (i > 0 && r.At < a[i-1].At) || r.At >= w.Duration {
			t.Fatalf("request %d: index %d at %s out of order or range", i, r.Index, r.At)
		}
	}
}

const poissonYAML = `
duration: 200s
arrival: {process: poisson, rate: 50}
prompt: {dist: fixed, value: 4}
output: {dist: fixed, value: 10}
`

func TestPoissonRateAndGaps(t *testing.T) {
	w := mustParse(t, poissonYAML)
	for seed := uint64(1); seed <= 3; seed++ {
		reqs := mustGenerate(t, w, seed)
		n := float64(len(reqs))
		want := 50 * 200.0
		if math.Abs(n-want) > 5*math.Sqrt(want) {
			t.Errorf("seed %d: %v arrivals, want %v ± 5σ", seed, n, want)
		}
		// Exponential gaps: the coefficient of variation is 1.
		var sum, sq float64
		for i := 1; i < len(reqs); i++ {
			g := (reqs[i].At - reqs[i-1].At).Seconds()
			sum += g
			sq += g * g
		}
		mean := sum / (n - 1)
		cv := math.Sqrt(sq/(n-1)-mean*mean) / mean
		if math.Abs(mean-0.02) > 0.001 || math.Abs(cv-1) > 0.05 {
			t.Errorf("seed %d: gap mean %v (want 0.02), cv %v (want 1)", seed, mean, cv)
		}
	}
}

func TestPromptLengthDistribution(t *testing.T) {
	reqs := mustGenerate(t, mustParse(t, `
duration: 40s
arrival: {process: poisson, rate: 50}
prompt: {dist: lognormal, mean: 1000, sigma: 0.6}
output: {dist: fixed, value: 10}
`), 9)
	var sum float64
	for _, r := range reqs {
		sum += float64(r.PromptTokens)
		if len(r.Prompt) != r.PromptTokens*workload.CharsPerToken || r.System != "" {
			t.Fatalf("request %d: %d bytes for %d tokens", r.Index, len(r.Prompt), r.PromptTokens)
		}
		if r.MaxTokens != 10 || r.Model != "llama-3.1-8b" || r.Endpoint != workload.Chat {
			t.Fatalf("request %d: %+v", r.Index, r)
		}
	}
	// The mean of ~2,000 lognormal draws (sigma 0.6) has a standard deviation of about 14 tokens.
	if mean := sum / float64(len(reqs)); math.Abs(mean-1000) > 60 {
		t.Errorf("mean prompt tokens %v, want 1000 ± 60", mean)
	}
}

func TestOnOffShape(t *testing.T) {
	w := mustParse(t, `
duration: 800s
arrival: {process: onoff, rate: 10}
prompt: {dist: fixed, value: 10}
output: {dist: fixed, value: 10}
`)
	reqs := mustGenerate(t, w, 5)
	var inBurst int
	for _, r := range reqs {
		if r.At%(8*time.Second) < 2*time.Second {
			inBurst++
		}
	}
	n := float64(len(reqs))
	if want := 10 * 800.0; math.Abs(n-want) > 5*math.Sqrt(want) {
		t.Errorf("%v arrivals, want %v (mean rate kept)", n, want)
	}
	if inBurst != len(reqs) {
		t.Errorf("%d of %d arrivals outside the 2 s bursts (4x factor leaves nothing between)", len(reqs)-inBurst, len(reqs))
	}
	// Rate within bursts is 40 req/s: 100 bursts × 2 s × 40.
	if want := 8000.0; math.Abs(float64(inBurst)-want) > 5*math.Sqrt(want) {
		t.Errorf("%d in bursts, want %v", inBurst, want)
	}
}

func TestOnOffLowBetweenBursts(t *testing.T) {
	w := mustParse(t, `
duration: 800s
arrival: {process: onoff, rate: 10, burst_factor: 2}
prompt: {dist: fixed, value: 10}
output: {dist: fixed, value: 10}
`)
	var on, off float64
	for _, r := range mustGenerate(t, w, 6) {
		if r.At%(8*time.Second) < 2*time.Second {
			on++
		} else {
			off++
		}
	}
	// 20 req/s for 200 s of bursts; (80-40)/6 ≈ 6.67 req/s for 600 s between.
	if math.Abs(on/200-20) > 1.5 || math.Abs(off/600-20.0/3) > 0.6 {
		t.Errorf("burst rate %v (want 20), between %v (want 6.67)", on/200, off/600)
	}
}

func TestSharedPrefixExactBytes(t *testing.T) {
	w, err := workload.Load("shared-prefix")
	if err != nil {
		t.Fatal(err)
	}
	reqs := mustGenerate(t, w, w.Seed)
	byGroup := map[int]string{}
	questions := map[int]map[string]bool{}
	for _, r := range reqs {
		if r.Group < 0 || r.Group >= 150 {
			t.Fatalf("group %d", r.Group)
		}
		if p, ok := byGroup[r.Group]; ok && p != r.System {
			t.Fatalf("group %d: prefixes differ", r.Group)
		}
		byGroup[r.Group] = r.System
		if questions[r.Group] == nil {
			questions[r.Group] = map[string]bool{}
		}
		questions[r.Group][r.Prompt] = true
		if !strings.HasPrefix(r.Text(), r.System) || r.MaxTokens != 300 {
			t.Fatalf("request %d: text does not start with its prefix or max_tokens %d", r.Index, r.MaxTokens)
		}
		if got := r.PromptTokens; got < 7150 || got > 7250 {
			t.Fatalf("request %d: %d prompt tokens, want about 7200", r.Index, got)
		}
	}
	if len(byGroup) < 120 {
		t.Errorf("only %d groups used", len(byGroup))
	}
	if byGroup[0][:64] == byGroup[1][:64] {
		t.Error("different groups share their first block")
	}
	for g, qs := range questions {
		if len(qs) > 5 {
			t.Fatalf("group %d has %d distinct questions, want ≤ 5", g, len(qs))
		}
	}
}

func TestAdapterShares(t *testing.T) {
	w, err := workload.Load("multi-lora")
	if err != nil {
		t.Fatal(err)
	}
	w, _ = w.WithDuration(200 * time.Second)
	reqs := mustGenerate(t, w, 11)
	counts := map[string]float64{}
	for _, r := range reqs {
		counts[r.Model]++
	}
	n := float64(len(reqs))
	want := map[string]float64{"llama-3.1-8b": 0.16}
	for _, a := range w.Adapters {
		want[a.Name] = a.Share
	}
	if len(counts) != 10 {
		t.Errorf("%d distinct models, want 10", len(counts))
	}
	for m, share := range want {
		sd := math.Sqrt(share * (1 - share) / n)
		if got := counts[m] / n; math.Abs(got-share) > 5*sd {
			t.Errorf("%s: share %v, want %v ± %v", m, got, share, 5*sd)
		}
	}
}

func TestRegionsMergeInOrder(t *testing.T) {
	w, err := workload.Load("region-burst")
	if err != nil {
		t.Fatal(err)
	}
	reqs := mustGenerate(t, w, w.Seed)
	per := map[string]int{}
	for i, r := range reqs {
		per[r.Region]++
		if i > 0 && r.At < reqs[i-1].At {
			t.Fatal("not ordered by arrival")
		}
	}
	if per["us-east-1"] < 300 || per["us-west-2"] < 300 || per["eu-west-1"] < 300 || len(per) != 3 {
		t.Errorf("per-region counts %v", per)
	}
}

func TestClosedLoopHasNoSchedule(t *testing.T) {
	w := mustParse(t, `
arrival: {process: closed, concurrency: 4}
prompt: {dist: fixed, value: 10}
output: {dist: fixed, value: 10}
`)
	if _, err := workload.Generate(w, 1); err != workload.ErrClosedLoop {
		t.Fatalf("err = %v", err)
	}
	g := workload.NewGenerator(w, 1)
	if a, b := g.Request(3), g.Request(3); a != b || a.PromptTokens != 10 {
		t.Fatalf("closed-loop request 3 not deterministic: %+v %+v", a, b)
	}
	if _, err := w.WithRate(5); err == nil {
		t.Fatal("rate override accepted on a closed loop")
	}
}

func TestOverrides(t *testing.T) {
	w, err := workload.Load("region-burst")
	if err != nil {
		t.Fatal(err)
	}
	r, err := w.WithRate(36)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.MeanRate(); math.Abs(got-36) > 1e-9 || r.Regions[0].Arrival.Rate != 12 {
		t.Errorf("mean %v, us-east-1 %v; want 36 and 12", got, r.Regions[0].Arrival.Rate)
	}
	if w.MeanRate() != 18 {
		t.Errorf("override changed the original: %v", w.MeanRate())
	}
	c, err := w.WithCapacity(100)
	if err != nil || math.Abs(c.MeanRate()-45) > 1e-9 {
		t.Errorf("capacity 100 × load 0.45: rate %v, err %v", c.MeanRate(), err)
	}
	m, err := workload.Load("multi-lora")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.WithAdapters([]string{"a", "b"}); err == nil {
		t.Error("adapter rename with the wrong count accepted")
	}
}
