package report_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
	"github.com/switchyard-dev/switchyard/tests/loadgen/trace"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// TestGoodputAndTrace checks the goodput count against an SLO and that a trace replay's report
// names the trace, its time scale and the attribution, in JSON and markdown.
func TestGoodputAndTrace(t *testing.T) {
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	samples := []loadgen.Sample{
		{Index: 0, TTFT: ms(100), E2E: ms(1100), OutputTokens: 11},                   // 100 ms a token: meets
		{Index: 1, TTFT: ms(100), E2E: ms(1200), OutputTokens: 11},                   // 110 ms a token: misses
		{Index: 2, TTFT: ms(900), E2E: ms(900), OutputTokens: 1},                     // TTFT misses
		{Index: 3, TTFT: ms(10), E2E: ms(20), OutputTokens: 2},                       // meets
		{Index: 4, E2E: ms(5), Error: loadgen.ErrHTTP5xx, Status: 500, MaxTokens: 3}, // failed
	}
	res := &loadgen.Result{
		Workload: "trace-azure-conv", Seed: 12, Rate: 2.5, Duration: 2 * time.Second,
		Targets: []loadgen.TargetResult{{Name: "a", URL: "http://a", Samples: samples}},
		SLO:     &workload.SLO{TTFT: ms(500), TPOT: ms(100)},
		Trace: &loadgen.TraceInfo{Format: "azure", File: "azure.csv", TimeScale: 3, PromptScale: 1, OutputScale: 1,
			Requests: 5, Attribution: trace.AzureAttribution},
	}
	rep, err := report.Summarize(res, "")
	if err != nil {
		t.Fatal(err)
	}
	g := rep.Targets[0].Goodput
	if g == nil || g.Requests != 2 || g.PerS != 1 || g.Fraction != 0.4 {
		t.Fatalf("goodput %+v, want 2 requests, 1/s, 0.4", g)
	}
	var js, md bytes.Buffer
	if err := report.WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	back, err := report.ReadJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	if back.Trace == nil || back.Trace.TimeScale != 3 || back.SLO == nil || back.SLO.TTFTMs != 500 ||
		back.Targets[0].Goodput.Requests != 2 {
		t.Errorf("JSON round trip lost the trace, SLO or goodput: %+v %+v", back.Trace, back.SLO)
	}
	if err := report.WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"at 3× the recorded rate", "Splitwise", "CC-BY 4.0", "TTFT ≤ 500 ms", "| a | 2 | 40.0% | 1.00 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}

	res.SLO, res.Trace = nil, nil
	rep, _ = report.Summarize(res, "")
	md.Reset()
	_ = report.WriteMarkdown(&md, rep)
	if rep.Targets[0].Goodput != nil || strings.Contains(md.String(), "Goodput") ||
		strings.Contains(md.String(), "Trace") {
		t.Errorf("goodput or trace without an SLO or trace:\n%s", md.String())
	}
}
