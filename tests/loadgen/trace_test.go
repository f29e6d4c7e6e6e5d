package loadgen_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

// TestTraceReplayAgainstModelsim replays the synthetic Mooncake trace (8 requests over 2.1 s)
// against one modelsim server in process: every request is sent at its recorded time, modelsim
// generates exactly the recorded output length, and its prefix cache finds the blocks that the
// hash ids share with earlier requests.
func TestTraceReplayAgainstModelsim(t *testing.T) {
	path, err := filepath.Abs(filepath.Join("trace", "testdata", "mooncake.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.Parse("t.yaml", fmt.Appendf(nil, `
name: t
seed: 5
duration: 10s
endpoint: completions
ignore_eos: true
trace: {format: mooncake, path: %s}
`, path))
	if err != nil {
		t.Fatal(err)
	}
	scfg := server.DefaultConfig()
	scfg.Listen, scfg.Model, scfg.TimeScale = "127.0.0.1:0", w.Model, 0.05
	srv, err := server.New(scfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-srv.Ready()

	cfg := loadgen.DefaultConfig()
	cfg.Workload = w
	res := run(t, cfg, loadgen.Target{Name: "modelsim", URL: "http://" + srv.Addr().String()})
	if res.Trace == nil || res.Trace.Requests != 8 || res.Rate != 0.8 {
		t.Fatalf("trace %+v, rate %v", res.Trace, res.Rate)
	}
	recorded := []time.Duration{0, 0, 250, 600, 900, 1300, 1750, 2100}
	// Requests 0 and 1 arrive together; from request 2 on, each arrives after the earlier ones
	// were prefilled (hundreds of ms later; prefill takes a few ms at time scale 0.05).
	cached := []int{-1, -1, 1024, 1024, 0, 688, 2048, 0}
	samples := res.Targets[0].Samples
	if len(samples) != len(recorded) {
		t.Fatalf("%d samples", len(samples))
	}
	for i, s := range samples {
		if !s.OK() {
			t.Fatalf("request %d: %s %s", i, s.Error, s.ErrorMessage)
		}
		if s.Scheduled != recorded[i]*time.Millisecond {
			t.Errorf("request %d scheduled at %v, recorded at %v ms", i, s.Scheduled, recorded[i])
		}
		if s.OutputTokens != s.MaxTokens {
			t.Errorf("request %d: %d output tokens, max_tokens %d", i, s.OutputTokens, s.MaxTokens)
		}
		if cached[i] >= 0 && s.CachedTokens != cached[i] {
			t.Errorf("request %d: %d cached tokens, want %d", i, s.CachedTokens, cached[i])
		}
	}
}
