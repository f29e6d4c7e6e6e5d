package report_test

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
)

func TestPercentile(t *testing.T) {
	tests := []struct {
		name   string
		values []float64
		p      float64
		want   float64
	}{
		{"single", []float64{7}, 50, 7},
		{"p50 of 1..10", seq(10), 50, 5},
		{"p95 of 1..10", seq(10), 95, 10},
		{"p90 of 1..10", seq(10), 90, 9},
		{"p99 of 1..100", seq(100), 99, 99},
		{"p100", seq(100), 100, 100},
		{"tiny p", seq(100), 0.001, 1},
		{"failure in the tail", []float64{1, 2, 3, math.Inf(1)}, 99, math.Inf(1)},
		{"failure below p50", []float64{1, 2, math.Inf(1), math.Inf(1)}, 50, 2},
		{"all failed", []float64{math.Inf(1), math.Inf(1)}, 50, math.Inf(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := report.Percentile(tt.values, tt.p); float64(got) != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	for _, p := range []float64{0, -1, 101, math.NaN()} {
		if got := report.Percentile(seq(3), p); !math.IsNaN(float64(got)) {
			t.Errorf("p=%v: got %v, want NaN", p, got)
		}
	}
	if got := report.Percentile(nil, 50); !math.IsNaN(float64(got)) {
		t.Errorf("empty: got %v", got)
	}
}

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i + 1)
	}
	return out
}

func TestNumJSON(t *testing.T) {
	in := []report.Num{1.5, 0, report.Inf, report.Num(math.Inf(-1)), report.Num(math.NaN())}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `[1.5,0,"inf","-inf",null]` {
		t.Fatalf("marshal: %s", b)
	}
	var out []report.Num
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out[0] != 1.5 || out[2] != report.Inf || !math.IsInf(float64(out[3]), -1) || !math.IsNaN(float64(out[4])) {
		t.Fatalf("unmarshal: %v", out)
	}
	if err := json.Unmarshal([]byte(`["fast"]`), &out); err == nil {
		t.Fatal("bad number accepted")
	}
}

// result builds a two-target run: round-robin with 2 of 10 requests failed and slow TTFTs,
// smart with none failed and fast TTFTs.
func result() *loadgen.Result {
	res := &loadgen.Result{
		Workload: "w",
		Seed:     9,
		Rate:     10,
		Duration: time.Second,
		Started:  time.Unix(1700000000, 0).UTC(),
		Elapsed:  2 * time.Second,
	}
	rr := loadgen.TargetResult{Name: "round-robin", URL: "http://127.0.0.1:1"}
	smart := loadgen.TargetResult{Name: "smart", URL: "http://127.0.0.1:2"}
	for i := range 10 {
		s := loadgen.Sample{
			Index:     i,
			Sent:      time.Duration(i) * 100 * time.Millisecond,
			MaxTokens: 3,
			TTFT:      time.Duration(i+1) * 100 * time.Millisecond,
			E2E:       time.Duration(i+1) * 200 * time.Millisecond,
			ITLs: []time.Duration{
				10 * time.Millisecond,
				20 * time.Millisecond,
			},
			OutputTokens: 3,
			PromptTokens: 100,
			CachedTokens: 50,
			Endpoint:     []string{"pod-a", "pod-b"}[i%2],
			Cluster:      "c1",
			Route:        "local",
		}
		f := s
		f.TTFT, f.E2E = s.TTFT/10, s.E2E/10
		smart.Samples = append(smart.Samples, f)
		if i >= 8 {
			s.Error, s.TTFT, s.ITLs, s.Cluster, s.Route = loadgen.ErrHTTP5xx, 0, nil, "", ""
		}
		rr.Samples = append(rr.Samples, s)
	}
	res.Targets = []loadgen.TargetResult{rr, smart}
	return res
}

func TestSummarizeCountsFailuresAsInfinitelySlow(t *testing.T) {
	r, err := report.Summarize(result(), "")
	if err != nil {
		t.Fatal(err)
	}
	rr, smart := r.Targets[0], r.Targets[1]
	if r.Baseline != "round-robin" || rr.Requests != 10 || rr.OK != 8 || rr.Errors != 2 ||
		rr.ErrorsByKind["http_5xx"] != 2 ||
		rr.ErrorRate != 0.2 {
		t.Fatalf("counts: baseline %q %+v", r.Baseline, rr)
	}
	if rr.TTFTMs.P50 != 500 || rr.TTFTMs.P95 != report.Inf || rr.TTFTMs.P99 != report.Inf || rr.E2EMs.P99 != report.Inf {
		t.Errorf("round-robin TTFT %+v E2E %+v", rr.TTFTMs, rr.E2EMs)
	}
	// 16 finite gaps and 2×2 infinite ones: P50 is 10 or 20 ms, P95 infinite.
	if rr.ITLMs.P50 != 20 || rr.ITLMs.P99 != report.Inf || smart.ITLMs.P99 != 20 {
		t.Errorf("ITL %+v / %+v", rr.ITLMs, smart.ITLMs)
	}
	if smart.TTFTMs.P50 != 50 || smart.TTFTMs.P95 != 100 || smart.Ratios["ttft_p50"] != 0.1 ||
		smart.Ratios["ttft_p95"] != 0 {
		t.Errorf("smart TTFT %+v ratios %v", smart.TTFTMs, smart.Ratios)
	}
	if rr.Ratios["ttft_p50"] != 1 || !math.IsNaN(float64(rr.Ratios["ttft_p99"])) {
		t.Errorf("baseline's own ratios %v", rr.Ratios)
	}
	if rr.PrefixCacheHitRate != 0.5 || rr.OutputTokens != 24 ||
		math.Abs(float64(rr.OutputTokensPerS)-24/2.9) > 1e-9 { // last response at 0.9 s + 2 s
		t.Errorf("hit %v tokens %d tok/s %v", rr.PrefixCacheHitRate, rr.OutputTokens, rr.OutputTokensPerS)
	}
	if math.Abs(rr.EndpointShare["pod-a"]-0.5) > 1e-9 || math.Abs(rr.ClusterShare["none"]-0.2) > 1e-9 ||
		rr.RegionShare != nil {
		t.Errorf("shares: endpoints %v clusters %v regions %v", rr.EndpointShare, rr.ClusterShare, rr.RegionShare)
	}
	if last := rr.TTFTCDF[len(rr.TTFTCDF)-1]; len(rr.TTFTCDF) != 8 || last.Frac != 0.8 || last.Ms != 800 {
		t.Errorf("CDF %v", rr.TTFTCDF)
	}
	if len(rr.Timeline) != 1 || rr.Timeline[0].Sent != 10 || rr.Timeline[0].Errors != 2 {
		t.Errorf("timeline %v", rr.Timeline)
	}
}

func TestBaselineSelection(t *testing.T) {
	r, err := report.Summarize(result(), "smart")
	if err != nil || r.Baseline != "smart" || r.Targets[0].Ratios["ttft_p50"] != 10 {
		t.Fatalf("explicit baseline: %v %q %v", err, r.Baseline, r.Targets[0].Ratios)
	}
	if _, err := report.Summarize(result(), "oracle"); err == nil {
		t.Fatal("missing baseline accepted")
	}
	res := result()
	res.Targets[0].Name = "random"
	r, err = report.Summarize(res, "")
	if err != nil || r.Baseline != "" || r.Targets[0].Ratios != nil {
		t.Fatalf("no round-robin: %v %q", err, r.Baseline)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r, err := report.Summarize(result(), "")
	if err != nil {
		t.Fatal(err)
	}
	var a bytes.Buffer
	if err := report.WriteJSON(&a, r); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"schema": "switchyard.loadgen.report/v1"`, `"p99": "inf"`, `"ttft_p99": null`, `"endpoint_share"`, `"ttft_cdf"`} {
		if !strings.Contains(a.String(), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
	back, err := report.ReadJSON(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := report.WriteJSON(&b, back); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatalf("round trip changed the report:\n%s\n---\n%s", a.String(), b.String())
	}
	bad := strings.Replace(a.String(), `"seed"`, `"sead"`, 1)
	if _, err := report.ReadJSON(strings.NewReader(bad)); err == nil {
		t.Fatal("unknown field accepted")
	}
	other := strings.Replace(a.String(), "report/v1", "report/v0", 1)
	if _, err := report.ReadJSON(strings.NewReader(other)); err == nil {
		t.Fatal("other schema accepted")
	}
}

func TestMarkdown(t *testing.T) {
	r, err := report.Summarize(result(), "")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := report.WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| round-robin | 10 | 2 (http_5xx 2) | 500 | ∞ | ∞ |",
		"| smart | 10 | 0 | 50.0 | 100 | 100 |",
		"Ratios against round-robin",
		"- smart: endpoints pod-a 50.0%, pod-b 50.0%; clusters c1 100.0%; routes local 100.0%",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestPlotIsPNG(t *testing.T) {
	r, err := report.Summarize(result(), "")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := report.WritePlot(&b, r); err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if cfg.Width < 400 || cfg.Height < 200 {
		t.Fatalf("PNG %dx%d", cfg.Width, cfg.Height)
	}
	empty := &report.Report{Workload: "none", Targets: []report.Target{{Name: "dead"}}}
	if err := report.WritePlot(&bytes.Buffer{}, empty); err != nil {
		t.Fatalf("plot of a run without successes: %v", err)
	}
}

func TestWriteFiles(t *testing.T) {
	r, err := report.Summarize(result(), "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := report.Files{JSON: dir + "/r.json", Plot: dir + "/p.png"}
	if err := report.WriteFiles(r, files); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{files.JSON, files.Plot} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
	if err := report.WriteFiles(r, report.Files{Markdown: dir + "/missing/dir/r.md"}); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}
