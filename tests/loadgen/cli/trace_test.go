package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/loadgen/loadgentest"
)

// TestTraceReplayFlags replays the synthetic Azure trace through the command with every trace
// flag, and checks the report: the window, the time scale, the SLO and the attribution.
func TestTraceReplayFlags(t *testing.T) {
	fake := &loadgentest.Server{Tokens: 2}
	srv := fake.Start(t)
	path, err := filepath.Abs(filepath.Join("..", "trace", "testdata", "azure.csv"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{
		"--target=" + srv, "--workload=trace-azure-conv", "--trace=" + path, "--trace-time-scale=4",
		"--trace-start=300ms", "--trace-max-requests=4", "--trace-prompt-scale=0.5", "--trace-output-scale=2",
		"--duration=5s", "--slo-ttft=2s", "--out=" + out,
	}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	rep := readReport(t, out)
	tr := rep.Trace
	if tr == nil || tr.Format != "azure" || tr.File != "azure.csv" || tr.TimeScale != 4 || tr.Requests != 4 || tr.StartS != 0.3 ||
		tr.PromptScale != 0.5 || tr.OutputScale != 2 ||
		!strings.Contains(tr.Attribution, "Splitwise") {
		t.Fatalf("trace %+v", tr)
	}
	// The workload's TPOT bound stays; --slo-ttft replaces its TTFT bound.
	if rep.SLO == nil || rep.SLO.TTFTMs != 2000 || rep.SLO.TPOTMs != 100 || rep.Targets[0].Requests != 4 ||
		rep.Targets[0].Goodput == nil {
		t.Fatalf("slo %+v, target %+v", rep.SLO, rep.Targets[0])
	}
	if rep.RateRPS != 0.8 { // 4 requests over 5 s
		t.Errorf("rate %v req/s, want 0.8", rep.RateRPS)
	}
	for _, want := range []string{"Trace replay: azure `azure.csv`", "at 4× the recorded rate", "CC-BY 4.0", "Goodput"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	// Arrivals count from the first row; the window from 300 ms starts at the rows 800, 1100, 1550
	// and 1900 ms after it (75, 980, 410 and 1500 context tokens): prompts of half as many tokens,
	// 4 bytes each.
	for i, want := range []int{38, 490, 205, 750} {
		body, ok := fake.Body(i)
		if _, prompt, _ := strings.Cut(body, "|"); !ok || len(prompt) != want*4 {
			t.Errorf("request %d: prompt of %d bytes, want %d tokens", i, len(prompt), want)
		}
	}
}

func TestTraceFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"not a trace workload", []string{"--workload=bursty", "--trace=x.csv"}, "workload bursty replays no trace"},
		{
			"missing file",
			[]string{"--workload=trace-azure-conv", "--trace=" + filepath.Join(t.TempDir(), "absent.csv"), "--duration=1s"},
			"trace file not found",
		},
		{
			"rate on a trace",
			[]string{"--workload=trace-conversation", "--rate=3"},
			"replays a trace (trace.time_scale sets its rate)",
		},
		{
			"bad format",
			[]string{"--workload=trace-conversation", "--trace-format=parquet"},
			`trace.format: "parquet" is not mooncake or azure`,
		},
		{"negative scale", []string{"--workload=trace-conversation", "--trace-time-scale=-2"}, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"--target=http://127.0.0.1:1"}, tt.args...)
			code := Main(context.Background(), args, &out, &errOut)
			if code != 1 || !strings.Contains(errOut.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q (want %q)", code, errOut.String(), tt.want)
			}
		})
	}
}
