package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
)

func TestRunRealTimeScaled(t *testing.T) {
	cfg := engine.DefaultConfig()
	e, err := engine.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := engine.NewScaledClock(0.2) // five times faster than real time
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = e.Run(ctx, clk) }()
	defer func() { cancel(); wg.Wait() }()

	start := time.Now()
	h, err := e.Submit(request("rt", 1000, 100), clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for !h.Progress().Done {
		select {
		case <-h.Notify():
		case <-deadline:
			t.Fatalf("request not done after 10s: %+v", h.Progress())
		}
	}
	// About 35 ms of prefill and 100 × 8 ms of decode: 0.84 simulated seconds, 168 ms real. Only a
	// stall of over 200 ms real (1 simulated second) would restart the schedule and stretch it.
	p := h.Progress()
	if sim := p.LastToken - p.Arrival; sim < 700*time.Millisecond || sim > 3*time.Second {
		t.Fatalf("simulated duration %v, want about 840ms", sim)
	}
	if real := time.Since(start); real < 120*time.Millisecond {
		t.Fatalf("finished in %v of real time, faster than the scaled schedule", real)
	}
	if snap := e.Snapshot(); snap.Stats.Lag.Count == 0 {
		t.Fatal("no lag observations from the real-time loop")
	}
}

// BenchmarkStep measures one engine step (plan + commit) with a batch of decoding sequences. The
// batch is rebuilt (off the clock) every 1,000 steps, before its sequences finish.
func BenchmarkStep(b *testing.B) {
	for _, batch := range []int{1, 64, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			sim := decodingBatch(b, batch)
			steps := 0
			b.ReportAllocs()
			for b.Loop() {
				if steps++; steps%1000 == 0 {
					b.StopTimer()
					sim = decodingBatch(b, batch)
					b.StartTimer()
				}
				sim.RunUntil(sim.Now() + 1) // exactly one step
			}
		})
	}
}

// decodingBatch returns a simulator with batch sequences decoding, each with 1,100 tokens to go.
func decodingBatch(b *testing.B, batch int) *engine.Simulator {
	cfg := engine.DefaultConfig()
	p, _ := profile.Lookup("h100")
	cfg.Profile = p
	sim, err := engine.NewSimulator(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for i := range batch {
		if _, err := sim.Submit(0, engine.Request{Model: "m", Prompt: prompt(fmt.Sprint(i), 100),
			PromptTokens: 100, MaxTokens: 1200}); err != nil {
			b.Fatal(err)
		}
	}
	for sim.Engine().Snapshot().Stats.GenerationTokens < uint64(batch) {
		sim.RunUntil(sim.Now() + 1)
	}
	return sim
}
