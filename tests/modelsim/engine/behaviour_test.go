package engine_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
)

func TestLoRASlots(t *testing.T) {
	tests := []struct {
		name     string
		maxLoras int
		wantWait bool // b waits until a finished
	}{
		{"one slot: second adapter waits", 1, true},
		{"two slots: both run", 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := newSim(t, "h100", func(c *engine.Config) { c.MaxLoras = tt.maxLoras })
			ra, rb := request("a", 100, 200), request("b", 100, 5)
			ra.Adapter, rb.Adapter = "lora-a", "lora-b"
			ha := submit(t, sim, 0, ra)
			hb := submit(t, sim, 20*time.Millisecond, rb)
			sim.Run()
			pa, pb := ha.Progress(), hb.Progress()
			if !pa.Done || !pb.Done {
				t.Fatal("adapters' requests did not finish")
			}
			waited := pb.FirstToken > pa.LastToken
			if waited != tt.wantWait {
				t.Fatalf("b first token %v, a last token %v: waited=%v, want %v",
					pb.FirstToken, pa.LastToken, waited, tt.wantWait)
			}
			load := sim.Engine().Profile().LoRALoad
			if got := pb.FirstToken - pb.Arrival; got < load {
				t.Fatalf("b TTFT %v does not include the adapter load time %v", got, load)
			}
			if n := sim.Engine().Snapshot().Stats.AdapterLoads; n != 2 {
				t.Fatalf("adapter loads = %d, want 2", n)
			}
		})
	}
}

func TestAdapterSnapshot(t *testing.T) {
	sim := newSim(t, "h100", func(c *engine.Config) { c.MaxLoras = 1 })
	ra, rb := request("a", 100, 100), request("b", 100, 5)
	ra.Adapter, rb.Adapter = "lora-a", "lora-b"
	submit(t, sim, 0, ra)
	submit(t, sim, 0, rb)
	sim.RunUntil(100 * time.Millisecond)
	snap := sim.Engine().Snapshot()
	if !slices.Equal(snap.RunningAdapters, []string{"lora-a"}) ||
		!slices.Equal(snap.WaitingAdapters, []string{"lora-b"}) || snap.MaxLoras != 1 {
		t.Fatalf("adapters running=%v waiting=%v max=%d", snap.RunningAdapters, snap.WaitingAdapters, snap.MaxLoras)
	}
}

func TestPreemptionRecomputes(t *testing.T) {
	sim := newSim(t, "h100", func(c *engine.Config) { c.Profile.KVTokens = 1600 })
	var hs []*engine.Handle
	for i := range 8 {
		hs = append(hs, submit(t, sim, 0, request(fmt.Sprint("pre", i), 100, 300)))
	}
	sim.Run()
	preempted := 0
	for i, h := range hs {
		p := h.Progress()
		if !p.Done || p.Generated != 300 {
			t.Fatalf("request %d: done=%v generated=%d", i, p.Done, p.Generated)
		}
		preempted += p.Preemptions
	}
	st := sim.Engine().Snapshot().Stats
	if st.Preemptions == 0 || uint64(preempted) != st.Preemptions {
		t.Fatalf("preemptions: engine %d, requests %d; want equal and > 0", st.Preemptions, preempted)
	}
}

func TestSameSeedSameTimings(t *testing.T) {
	run := func(seed uint64) [][]time.Duration {
		sim := newSim(t, "l40s", func(c *engine.Config) { c.Seed = seed })
		var hs []*engine.Handle
		for i := range 20 {
			at := time.Duration(i*37) * time.Millisecond
			hs = append(hs, submit(t, sim, at, request(fmt.Sprint("s", i%5), 200+50*i, 20+i)))
		}
		sim.Run()
		out := make([][]time.Duration, len(hs))
		for i, h := range hs {
			out[i] = h.Progress().TokenTimes
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	if !slices.EqualFunc(a, b, slices.Equal) {
		t.Fatal("same seed gave different token timings")
	}
	if slices.EqualFunc(a, c, slices.Equal) {
		t.Fatal("different seeds gave identical token timings (seed unused)")
	}
}

func TestCancelFreesBlocks(t *testing.T) {
	sim := newSim(t, "h100", nil)
	h := submit(t, sim, 0, request("c", 1000, 1000))
	sim.RunUntil(200 * time.Millisecond)
	if used := sim.Engine().Snapshot().UsedBlocks; used == 0 {
		t.Fatal("running request holds no blocks")
	}
	sim.Engine().Cancel(h)
	sim.Run()
	snap := sim.Engine().Snapshot()
	if snap.UsedBlocks != 0 || snap.Running != 0 || snap.Stats.Cancelled != 1 || h.Progress().Done {
		t.Fatalf("after cancel: used=%d running=%d cancelled=%d", snap.UsedBlocks, snap.Running, snap.Stats.Cancelled)
	}
}

func TestPrefixEvictedUnderPressure(t *testing.T) {
	sim := newSim(t, "h100", func(c *engine.Config) { c.Profile.KVTokens = 4096 })
	submit(t, sim, 0, request("old", 1000, 1))
	sim.Run()
	for i := range 6 { // 6 × 1,000 fresh tokens push the old prefix out of 4,096 tokens
		submit(t, sim, sim.Now(), request(fmt.Sprint("new", i), 1000, 1))
		sim.Run()
	}
	again := submit(t, sim, sim.Now(), request("new5", 1000, 1))
	old := submit(t, sim, sim.Now()+time.Second, request("old", 1000, 1))
	sim.Run()
	if c := again.Progress().CachedTokens; c == 0 {
		t.Fatal("most recent prompt was evicted")
	}
	if c := old.Progress().CachedTokens; c != 0 {
		t.Fatalf("least recently used prompt still cached (%d tokens)", c)
	}
}

func TestSubmitRejects(t *testing.T) {
	sim := newSim(t, "a10g", nil)
	tests := []struct {
		name string
		req  engine.Request
		want error
	}{
		{"no prompt tokens", engine.Request{Model: "m", MaxTokens: 1}, engine.ErrInvalidRequest},
		{"no output", engine.Request{Model: "m", PromptTokens: 1}, engine.ErrInvalidRequest},
		{"larger than KV", request("x", 29000, 2000), engine.ErrExceedsKV},
		{"adapter without slots", engine.Request{Model: "m", Adapter: "a", PromptTokens: 1, MaxTokens: 1},
			engine.ErrNoAdapterSlots},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := sim.Submit(0, tt.req); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}
