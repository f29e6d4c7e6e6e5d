package bench

import (
	"bytes"
	"context"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
)

// Pooled runs read as one long run: each later run starts a whole number of burst periods after
// the pool's last response, so every request keeps its place in the burst cycle, and the
// throughput is that of one run.
func TestPoolRuns(t *testing.T) {
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	run := func(ttft time.Duration) *loadgen.Result {
		return &loadgen.Result{Duration: sec(60), Elapsed: sec(61), Targets: []loadgen.TargetResult{
			{Name: "local-only", Samples: []loadgen.Sample{
				{Index: 0, Region: "east", Scheduled: sec(1), Sent: sec(1), TTFT: ttft, E2E: sec(2), OutputTokens: 100},
				{Index: 1, Region: "west", Scheduled: sec(59), Sent: sec(59), TTFT: ttft, E2E: sec(2), OutputTokens: 100},
			}},
			{Name: "global", Samples: []loadgen.Sample{
				{Index: 0, Region: "east", Scheduled: sec(1), Sent: sec(1), TTFT: ttft / 2, E2E: sec(2), OutputTokens: 100},
				{Index: 1, Region: "west", Scheduled: sec(59), Sent: sec(59), TTFT: ttft / 2, E2E: sec(2), OutputTokens: 100},
			}},
		}}
	}
	one := run(sec(1))
	pooled := poolRuns(nil, one, sec(8))
	if pooled != one {
		t.Fatal("the first run is not the pool")
	}
	pooled = poolRuns(pooled, run(sec(3)), sec(8))
	pooled = poolRuns(pooled, run(sec(5)), sec(8))
	// 61 s elapsed → the second run starts at 64 s (8 periods), ends at 125 s; the third at 128 s.
	if pooled.Duration != sec(180) || pooled.Elapsed != sec(189) {
		t.Fatalf("pooled duration %v elapsed %v, want 3m0s and 3m9s", pooled.Duration, pooled.Elapsed)
	}
	for _, tr := range pooled.Targets {
		if len(tr.Samples) != 6 {
			t.Fatalf("%s: %d samples, want 6", tr.Name, len(tr.Samples))
		}
		for i, want := range []time.Duration{sec(1), sec(59), sec(65), sec(123), sec(129), sec(187)} {
			s := tr.Samples[i]
			if s.Scheduled != want || s.Sent != want || s.Scheduled%sec(8) != tr.Samples[i%2].Scheduled%sec(8) {
				t.Errorf(
					"%s sample %d scheduled %v sent %v, want %v (same place in the 8-s cycle)",
					tr.Name,
					i,
					s.Scheduled,
					s.Sent,
					want,
				)
			}
		}
	}
	rep, err := report.Summarize(pooled, "local-only")
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Targets[0].ByClientRegion["east"].P99; got != 5000 {
		t.Errorf("pooled east P99 %v ms, want 5000 (the slowest of the three runs)", got)
	}
	if got := float64(rep.Targets[0].OutputTokensPerS); got < 3.1 || got > 3.2 {
		t.Errorf("pooled throughput %v tokens/s, want 600 over 189 s", got)
	}
}

func TestAddModeCounts(t *testing.T) {
	run := func(n float64) []ModeFigures {
		return []ModeFigures{{Mode: "global",
			OverflowAnswered: ChoiceCounts{"best": n, "other": 1},
			LeftBecause:      map[string]ChoiceCounts{"east": {"past_throughput": n}},
			Attempts:         map[string]ChoiceCounts{"east": {"answered": 10 * n}, "west": {"handed_back": n}},
		}}
	}
	pool := addModeCounts(nil, run(1))
	pool = addModeCounts(pool, run(2))
	pool = addModeCounts(pool, run(3))
	m := pool[0]
	if m.OverflowAnswered["best"] != 6 || m.OverflowAnswered["other"] != 3 ||
		m.LeftBecause["east"]["past_throughput"] != 6 ||
		m.Attempts["east"]["answered"] != 60 ||
		m.Attempts["west"]["handed_back"] != 6 {
		t.Fatalf("pooled counts %+v", m)
	}
}

// --repeat must be at least 1, and 1 for a Tier 1 scenario; bad values are flag errors (2).
func TestRepeatFlag(t *testing.T) {
	for _, args := range [][]string{
		{"--scenario=region-burst", "--repeat=0"},
		{"--scenario=mixed-fleet", "--repeat=2"},
	} {
		var stderr bytes.Buffer
		if code := Main(
			context.Background(),
			args,
			&bytes.Buffer{},
			&stderr,
		); code != 2 ||
			!strings.Contains(stderr.String(), "--repeat") {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming --repeat", args, code, stderr.String())
		}
	}
}

func TestRatioQuantile(t *testing.T) {
	// 10 observations: 2 up to 0.5, 4 more up to 1, 3 more up to 2, 1 above 4.
	h := ChoiceCounts{"0.5": 2, "1": 6, "2": 9, "4": 9, "+Inf": 10}
	for _, tt := range []struct{ q, want float64 }{
		{0.1, 0.25},  // rank 1 of the 2 in (0, 0.5]
		{0.5, 0.875}, // rank 5: 3 of the 4 in (0.5, 1]
		{0.9, 2},     // rank 9: the top of (1, 2]
		{1, 4},       // past the last finite bound: its value
	} {
		if got, ok := ratioQuantile(h, tt.q); !ok || math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("quantile %v = %v, %v; want %v", tt.q, got, ok, tt.want)
		}
	}
	if _, ok := ratioQuantile(ChoiceCounts{"1": 0, "+Inf": 0}, 0.5); ok {
		t.Error("an empty histogram has a quantile")
	}
	if _, ok := ratioQuantile(nil, 0.5); ok {
		t.Error("no histogram has a quantile")
	}
}

// The buckets are read from the text format as a gateway exposes it, two series summed.
func TestHistogramBucketsFromText(t *testing.T) {
	const text = `# TYPE r histogram
r_bucket{gw="a",le="1"} 2
r_bucket{gw="a",le="2"} 3
r_bucket{gw="a",le="+Inf"} 4
r_sum{gw="a"} 9
r_count{gw="a"} 4
r_bucket{gw="b",le="1"} 1
r_bucket{gw="b",le="2"} 1
r_bucket{gw="b",le="+Inf"} 2
r_sum{gw="b"} 9
r_count{gw="b"} 2
`
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	got := histogramBuckets(mfs, "r")
	want := ChoiceCounts{"1": 3, "2": 4, "+Inf": 6}
	if !maps.Equal(got, want) {
		t.Fatalf("buckets %v, want %v", got, want)
	}
	if q, _ := ratioQuantile(got, 0.5); q != 1 {
		t.Fatalf("median %v, want 1 (3 of 6 observations up to 1)", q)
	}
	by := histogramBucketsBy(mfs, "r", "gw")
	wantBy := map[string]ChoiceCounts{"a": {"1": 2, "2": 3, "+Inf": 4}, "b": {"1": 1, "2": 1, "+Inf": 2}}
	if len(by) != len(wantBy) || !maps.Equal(by["a"], wantBy["a"]) || !maps.Equal(by["b"], wantBy["b"]) {
		t.Fatalf("buckets by gw %v, want %v", by, wantBy)
	}
}
