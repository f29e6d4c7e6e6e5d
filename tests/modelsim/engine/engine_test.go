package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
)

// prompt returns a prompt of about n tokens (4 bytes each) whose text is unique to tag.
func prompt(tag string, n int) []byte {
	var b strings.Builder
	for b.Len() < 4*n {
		fmt.Fprintf(&b, "%s %06d ", tag, b.Len())
	}
	return []byte(b.String()[:4*n])
}

func request(tag string, promptTokens, maxTokens int) engine.Request {
	return engine.Request{
		Model: "m", Prompt: prompt(tag, promptTokens), PromptTokens: promptTokens,
		MaxTokens: maxTokens, RecordTimes: true,
	}
}

func newSim(t testing.TB, prof string, mutate func(*engine.Config)) *engine.Simulator {
	t.Helper()
	cfg := engine.DefaultConfig()
	p, err := profile.Lookup(prof)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Profile = p
	if mutate != nil {
		mutate(&cfg)
	}
	sim, err := engine.NewSimulator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sim
}

func submit(t testing.TB, sim *engine.Simulator, at time.Duration, r engine.Request) *engine.Handle {
	t.Helper()
	h, err := sim.Submit(at, r)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func ttft(h *engine.Handle) time.Duration {
	p := h.Progress()
	return p.FirstToken - p.Arrival
}

func TestTTFTAcrossProfiles(t *testing.T) {
	got := map[string]time.Duration{}
	for _, name := range profile.Names() {
		sim := newSim(t, name, nil)
		h := submit(t, sim, 0, request("p", 2000, 4))
		sim.Run()
		if p := h.Progress(); !p.Done || p.Generated != 4 {
			t.Fatalf("%s: progress %+v, want 4 tokens and done", name, p)
		}
		got[name] = ttft(h)
	}
	if ratio := float64(got["a10g"]) / float64(got["h100"]); ratio < 5 {
		t.Fatalf("a10g TTFT %v / h100 TTFT %v = %.1f, want >= 5", got["a10g"], got["h100"], ratio)
	}
	if got["h100"] >= got["a100"] || got["a100"] >= got["l40s"] || got["l40s"] >= got["a10g"] {
		t.Fatalf("TTFT not ordered by GPU speed: %v", got)
	}
	// 2,000 tokens at 30,000 tok/s is 66.7 ms, plus a few ms of overhead.
	if d := got["h100"]; d < 60*time.Millisecond || d > 90*time.Millisecond {
		t.Fatalf("h100 TTFT %v outside [60ms, 90ms]", d)
	}
}

func TestPrefixCacheHit(t *testing.T) {
	sim := newSim(t, "a100", nil)
	first := submit(t, sim, 0, request("shared", 3000, 2))
	sim.Run()
	second := submit(t, sim, sim.Now()+time.Second, request("shared", 3000, 2))
	other := submit(t, sim, sim.Now()+3*time.Second, request("other", 3000, 2))
	sim.Run()

	if c := first.Progress().CachedTokens; c != 0 {
		t.Fatalf("first request cached %d tokens, want 0", c)
	}
	if c := second.Progress().CachedTokens; c < 2900 || c >= 3000 {
		t.Fatalf("repeated prompt cached %d tokens, want in [2900, 3000)", c)
	}
	if c := other.Progress().CachedTokens; c != 0 {
		t.Fatalf("different prompt cached %d tokens, want 0", c)
	}
	if a, b := ttft(first), ttft(second); b*3 > a {
		t.Fatalf("cached TTFT %v not well below uncached %v", b, a)
	}
	st := sim.Engine().Snapshot().Stats
	if st.PrefixHits != uint64(second.Progress().CachedTokens) || st.PrefixQueries != 9000 {
		t.Fatalf("prefix stats hits=%d queries=%d", st.PrefixHits, st.PrefixQueries)
	}
}

func TestKVExhaustionQueues(t *testing.T) {
	// Ten 6,000-token prompts with long outputs: 60,000 tokens fit an h100 (400,000 KV tokens) but
	// not an a10g (30,000), where only four run and the rest wait for blocks.
	tests := []struct {
		profile     string
		at          time.Duration
		wantRunning int
		wantWaiting int
	}{
		{"h100", 4 * time.Second, 10, 0},
		{"a10g", 12 * time.Second, 4, 6},
	}
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			sim := newSim(t, tt.profile, nil)
			var hs []*engine.Handle
			for i := range 10 {
				hs = append(hs, submit(t, sim, 0, request(fmt.Sprint("kv", i), 6000, 600)))
			}
			sim.RunUntil(tt.at)
			snap := sim.Engine().Snapshot()
			if snap.Waiting != tt.wantWaiting || snap.Running != tt.wantRunning {
				t.Fatalf("waiting=%d running=%d, want %d and %d",
					snap.Waiting, snap.Running, tt.wantWaiting, tt.wantRunning)
			}
			if tt.wantWaiting > 0 && snap.KVUsage() < 0.75 {
				t.Fatalf("kv usage %.2f, want >= 0.75 while requests wait", snap.KVUsage())
			}
			sim.Run()
			for i, h := range hs {
				if !h.Progress().Done {
					t.Fatalf("request %d did not finish", i)
				}
			}
			if snap := sim.Engine().Snapshot(); snap.Waiting != 0 || snap.Running != 0 || snap.UsedBlocks != 0 {
				t.Fatalf("after drain: waiting=%d running=%d used=%d", snap.Waiting, snap.Running, snap.UsedBlocks)
			}
		})
	}
}

func TestDecodeSlowsWithBatch(t *testing.T) {
	itl := func(n int) time.Duration {
		sim := newSim(t, "h100", func(c *engine.Config) { c.Profile.Jitter = 0 })
		var h *engine.Handle
		for i := range n {
			h = submit(t, sim, 0, request(fmt.Sprint("b", i), 16, 40))
		}
		sim.Run()
		tt := h.Progress().TokenTimes
		return (tt[len(tt)-1] - tt[10]) / time.Duration(len(tt)-11)
	}
	one, many := itl(1), itl(64)
	if one < 7*time.Millisecond || one > 9*time.Millisecond {
		t.Fatalf("ITL at batch 1 = %v, want about 8ms", one)
	}
	if many < 14*time.Millisecond || many > 16*time.Millisecond {
		t.Fatalf("ITL at batch 64 = %v, want about 15ms", many)
	}
}

func TestChunkedPrefill(t *testing.T) {
	sim := newSim(t, "a10g", func(c *engine.Config) { c.Profile.Jitter = 0 })
	long := submit(t, sim, 0, request("long", 10000, 1))
	short := submit(t, sim, 10*time.Millisecond, request("short", 100, 1))
	sim.Run()
	st := sim.Engine().Snapshot().Stats
	if st.Steps < 5 {
		t.Fatalf("10,000-token prompt ran in %d steps, want >= 5 chunks of 2,048", st.Steps)
	}
	if !long.Progress().Done || !short.Progress().Done {
		t.Fatal("requests did not finish")
	}
}
