package bench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/physics"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
)

// TestScaleTimeTrace: with a modelsim time scale, a trace replays 1/ts as fast in real time and
// its SLO is ts times as long, so the replay is the same in simulated time.
func TestScaleTimeTrace(t *testing.T) {
	w, err := workload.Load("trace-conversation")
	if err != nil {
		t.Fatal(err)
	}
	got, err := scaleTime(w, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got.Trace.TimeScale != w.Trace.TimeScale/2 || got.Duration != 2*w.Duration ||
		got.SLO.TTFT != 2*w.SLO.TTFT || got.SLO.TPOT != 2*w.SLO.TPOT {
		t.Errorf("scaled trace %+v, slo %+v, duration %v", got.Trace, got.SLO, got.Duration)
	}
	if w.Trace.TimeScale != 1 || w.SLO.TTFT != 2*time.Second {
		t.Error("the original workload was changed")
	}
}

// TestTraceScenarioFiles: a trace scenario reads the file --trace or --trace-dir names, and a
// missing trace fails before anything starts, naming the file.
func TestTraceScenarioFiles(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "loadgen", "trace", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Lookup("trace-azure-conv")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, dir, wantErr string
	}{
		{name: "missing", dir: t.TempDir(), wantErr: "trace file not found"},
		{name: "by path", path: filepath.Join(dir, "azure.csv"), wantErr: "no request in the window"}, // the window starts at 2 min
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Scenario, cfg.TracePath, cfg.TraceDir, cfg.Capacity = sc, tc.path, tc.dir, 10
			_, err := prepareWorkload(context.Background(), &cfg, &Result{})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestTraceCapacityProbe: a capacity probe replays the trace's requests in order with Poisson
// arrivals, and a trace too short for a probe is an error asking for --capacity.
func TestTraceCapacityProbe(t *testing.T) {
	w, err := workload.Load("trace-conversation")
	if err != nil {
		t.Fatal(err)
	}
	path, err := filepath.Abs(filepath.Join("..", "loadgen", "trace", "testdata", "mooncake.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if w, err = w.WithTrace(func(tr *workload.Trace) { tr.Path = path }); err != nil {
		t.Fatal(err)
	}
	src := &traceProbeRequests{w: w}
	reqs, err := src.requests(0.5, 10*time.Second) // about 5 of the trace's 8
	if err != nil {
		t.Fatal(err)
	}
	all, err := workload.Generate(w, w.Seed)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if r.Text() != all[i].Text() || (i > 0 && r.At <= reqs[i-1].At) || r.At >= 10*time.Second {
			t.Errorf("probe request %d at %v is not trace request %d in order", i, r.At, i)
		}
	}
	if _, err := src.requests(100, time.Minute); err == nil || !strings.Contains(err.Error(), "give --capacity") {
		t.Errorf("probe beyond the trace: %v", err)
	}
	p, err := profile.Lookup("h100")
	if err != nil {
		t.Fatal(err)
	}
	pr, err := simulateRate(
		w,
		src,
		p,
		0.5,
		CapacityConfig{Span: 10 * time.Second, MaxMeanWaiting: 1, Physics: physics.DefaultConfig()},
	)
	if err != nil || !pr.Sustained || pr.TooLong != 0 {
		t.Errorf("probe %+v, %v", pr, err)
	}
}
