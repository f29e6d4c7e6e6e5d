package engine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/physics"
)

// withPhysics sets the engine's step-time family and jitter.
func withPhysics(f physics.Family, jitter float64) func(*engine.Config) {
	return func(c *engine.Config) { c.Physics = physics.Config{Family: f, Jitter: jitter} }
}

// TestPhysicsTokenTimes follows one request through the engine under each calibrated family and
// checks every token time against the hand-computed step times (h100, no jitter): the request
// reaches the engine after the API overhead (232.46 µs + 1,000 × 1.7524 µs = 1.984822 ms), its
// prefill step lasts 9.110145 + 1,000 × 0.017251 ms (+ 500,500 pairs × 0.64788 ns = 0.324265 ms
// with attention), and each decode step 9.110145 + 0.005999 ms (+ context × 39.126 ns).
func TestPhysicsTokenTimes(t *testing.T) {
	const api = 1984822 * time.Nanosecond
	tests := []struct {
		family physics.Family
		want   []time.Duration // token times
	}{
		{physics.BLIS, []time.Duration{
			api + 26361010*time.Nanosecond,
			api + 26361010*time.Nanosecond + 9116144*time.Nanosecond,
			api + 26361010*time.Nanosecond + 2*9116144*time.Nanosecond,
		}},
		{physics.Attention, []time.Duration{
			api + 26685275*time.Nanosecond,
			// decode at context 1,000: + 39.126 µs
			api + 26685275*time.Nanosecond + 9155270*time.Nanosecond,
			// decode at context 1,001
			api + 26685275*time.Nanosecond + 9155270*time.Nanosecond + 9155309*time.Nanosecond,
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.family), func(t *testing.T) {
			sim := newSim(t, "h100", withPhysics(tt.family, 0))
			h := submit(t, sim, 0, request("one", 1000, 3))
			sim.Run()
			got := h.Progress().TokenTimes
			if len(got) != len(tt.want) {
				t.Fatalf("token times %v, want %d", got, len(tt.want))
			}
			for i := range got {
				if d := got[i] - tt.want[i]; d < -2*time.Microsecond || d > 2*time.Microsecond {
					t.Errorf("token %d at %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestPhysicsPreemptionUnderKVPressure runs more decoding sequences than the KV cache holds under
// the calibrated family: the newest ones are preempted, recomputed later (the engine computes more
// tokens than the requests' prompts and outputs), and every request still finishes.
func TestPhysicsPreemptionUnderKVPressure(t *testing.T) {
	sim := newSim(t, "a10g", func(c *engine.Config) {
		c.Profile.KVTokens = 3200
		c.Physics = physics.Config{Family: physics.Attention, Jitter: physics.FamilyDefaultJitter}
	})
	var hs []*engine.Handle
	prompts, outputs := 0, 0
	for i := range 10 {
		hs = append(hs, submit(t, sim, time.Duration(i)*time.Millisecond, request(fmt.Sprint("kv", i), 200, 250)))
		prompts, outputs = prompts+200, outputs+250
	}
	sim.Run()
	preempted := 0
	for i, h := range hs {
		p := h.Progress()
		if !p.Done || p.Generated != 250 || !slices.IsSorted(p.TokenTimes) {
			t.Fatalf("request %d: done=%v generated=%d", i, p.Done, p.Generated)
		}
		preempted += p.Preemptions
	}
	st := sim.Engine().Snapshot().Stats
	if st.Preemptions == 0 || uint64(preempted) != st.Preemptions {
		t.Fatalf("preemptions: engine %d, requests %d; want equal and > 0", st.Preemptions, preempted)
	}
	// Every step's tokens: prompts once, one decode per output token after the first, plus the
	// recomputation of preempted sequences.
	if computed := st.IterationTokens.Sum; computed <= float64(prompts+outputs-len(hs)) {
		t.Fatalf("engine computed %.0f tokens, want more than %d (recomputed prefills)", computed, prompts+outputs-len(hs))
	}
	if n := st.Inference.Count; n != uint64(len(hs)) {
		t.Fatalf("inference histogram has %d requests, want %d", n, len(hs))
	}
}

// TestPhysicsChunkedPrefill: a 32,000-token prompt is prefilled in chunks of the h100's 8,192-token
// budget, so a sequence already decoding keeps getting a token every step (one chunk's time, not
// the whole prefill's), a short prompt arriving meanwhile gets its first token no later than the
// long one, and, with attention, the long prompt costs more per token than a short one.
func TestPhysicsChunkedPrefill(t *testing.T) {
	perToken := map[physics.Family]float64{}
	for _, f := range []physics.Family{physics.BLIS, physics.Attention} {
		t.Run(string(f), func(t *testing.T) {
			sim := newSim(t, "h100", withPhysics(f, 0))
			dec := submit(t, sim, 0, request("decoding", 100, 200))
			long := submit(t, sim, 50*time.Millisecond, request("long", 32000, 2))
			short := submit(t, sim, 80*time.Millisecond, request("short", 500, 2))
			sim.Run()
			lp, sp := long.Progress(), short.Progress()
			if sp.FirstToken > lp.FirstToken {
				t.Errorf("short first token %v after the long one's %v", sp.FirstToken, lp.FirstToken)
			}
			longTTFT := lp.FirstToken - lp.Arrival
			var maxGap time.Duration
			tt := dec.Progress().TokenTimes
			for i := 1; i < len(tt); i++ {
				if tt[i] > lp.Arrival && tt[i-1] < lp.FirstToken {
					maxGap = max(maxGap, tt[i]-tt[i-1])
				}
			}
			if maxGap == 0 || maxGap*3 > longTTFT {
				t.Errorf(
					"decoding ITL during the long prefill up to %v, long TTFT %v: want chunks of at most a third",
					maxGap,
					longTTFT,
				)
			}
			one := newSim(t, "h100", withPhysics(f, 0))
			ref := submit(t, one, 0, request("ref", 1000, 2))
			one.Run()
			perToken[f] = float64(longTTFT) / 32000 / (float64(ttft(ref)) / 1000)
		})
	}
	if perToken[physics.Attention] < 1.2*perToken[physics.BLIS] {
		t.Fatalf(
			"long/short per-token TTFT: attention %.2f, blis %.2f; want attention's clearly higher",
			perToken[physics.Attention],
			perToken[physics.BLIS],
		)
	}
}

// TestPhysicsDeterministicForSeed: with lognormal jitter the same seed gives bit-identical token
// times, another seed different ones, and a clone continues exactly like the original.
func TestPhysicsDeterministicForSeed(t *testing.T) {
	run := func(seed uint64) (*engine.Simulator, [][]time.Duration) {
		sim := newSim(t, "a100", func(c *engine.Config) {
			c.Seed = seed
			c.Physics = physics.Config{Family: physics.Attention, Jitter: 0.2}
		})
		var hs []*engine.Handle
		for i := range 12 {
			hs = append(hs, submit(t, sim, time.Duration(i*29)*time.Millisecond, request(fmt.Sprint("d", i%4), 300+40*i, 10+i)))
		}
		sim.RunUntil(150 * time.Millisecond)
		clone, mapped := sim.CloneMapped()
		sim.Run()
		clone.Run()
		out := make([][]time.Duration, len(hs))
		for i, h := range hs {
			out[i] = h.Progress().TokenTimes
			if !slices.Equal(out[i], mapped[h].Progress().TokenTimes) {
				t.Fatalf("seed %d request %d: clone diverged", seed, i)
			}
		}
		return sim, out
	}
	_, a := run(3)
	_, b := run(3)
	_, c := run(4)
	if !slices.EqualFunc(a, b, slices.Equal) {
		t.Fatal("same seed gave different token times")
	}
	if slices.EqualFunc(a, c, slices.Equal) {
		t.Fatal("different seeds gave identical token times")
	}
}

// BenchmarkStepPhysics times one engine step (plan + commit) of 64 decoding sequences under each
// family.
func BenchmarkStepPhysics(b *testing.B) {
	for _, f := range physics.Families() {
		b.Run(string(f), func(b *testing.B) {
			mk := func() *engine.Simulator {
				sim := newSim(b, "h100", withPhysics(f, physics.FamilyDefaultJitter))
				for i := range 64 {
					submit(
						b,
						sim,
						0,
						engine.Request{Model: "m", Prompt: prompt(fmt.Sprint(i), 100), PromptTokens: 100, MaxTokens: 1200},
					)
				}
				for sim.Engine().Snapshot().Stats.GenerationTokens < 64 {
					sim.RunUntil(sim.Now() + 1)
				}
				return sim
			}
			sim := mk()
			steps := 0
			b.ReportAllocs()
			for b.Loop() {
				if steps++; steps%1000 == 0 {
					b.StopTimer()
					sim = mk()
					b.StartTimer()
				}
				sim.RunUntil(sim.Now() + 1)
			}
		})
	}
}
