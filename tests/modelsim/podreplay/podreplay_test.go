package podreplay_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/podreplay"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
)

const ms = time.Millisecond

// l40s returns an engine on the l40s profile (8,000 prompt tokens/s, 4,096-token steps) without
// step-time jitter, so that times can be worked out by hand.
func l40s(t *testing.T) podreplay.Config {
	t.Helper()
	p, err := profile.Lookup("l40s")
	if err != nil {
		t.Fatal(err)
	}
	p.Jitter = 0
	cfg := engine.DefaultConfig()
	cfg.Profile = p
	return podreplay.Config{Engine: cfg}
}

// A lone request waits for the API overhead, then one step: its prefill and the step overhead.
func TestReplayLoneRequest(t *testing.T) {
	res, err := podreplay.Replay(
		l40s(t),
		[]podreplay.Request{{ID: 7, Arrival: 5 * ms, PromptTokens: 800, OutputTokens: 3}},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := 3*ms + 1500*time.Microsecond + 100*ms // API overhead + step overhead + 800 / 8,000 s
	if len(res) != 1 || res[0].ID != 7 || res[0].TTFT != want || res[0].Held != 0 {
		t.Fatalf("got %+v, want request 7 with TTFT %v", res, want)
	}
}

// Results come in arrival order whatever the input order, and do not depend on it.
func TestReplayOrder(t *testing.T) {
	cfg := l40s(t)
	rng := rand.New(rand.NewPCG(3, 4))
	var reqs []podreplay.Request
	for i := range 60 {
		reqs = append(
			reqs,
			podreplay.Request{
				ID:           i,
				Arrival:      time.Duration(i) * 40 * ms,
				PromptTokens: 100 + rng.IntN(3000),
				OutputTokens: 1 + rng.IntN(200),
			},
		)
	}
	want, err := podreplay.Replay(cfg, reqs)
	if err != nil {
		t.Fatal(err)
	}
	shuffled := slices.Clone(reqs)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	got, err := podreplay.Replay(cfg, shuffled)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("shuffled input gave %+v, want %+v", got, want)
	}
	for i, r := range got {
		if r.ID != i || r.TTFT <= 0 {
			t.Fatalf("result %d: %+v, want request %d with a first token", i, r, i)
		}
	}
}

// A 500-token request waits for a 3,000-token prefill. Sent as it arrives, a 3,000-token prompt
// that arrived 10 ms after it joins the step that finishes it and nearly doubles its wait; held
// back while the pod has more than 4,096 tokens to prefill, it joins the next step instead and
// loses little. LaterArrivalDelay finds the same delay without holding.
func TestHoldKeepsALaterPromptOutOfAStep(t *testing.T) {
	reqs := []podreplay.Request{
		{ID: 0, Arrival: 0, PromptTokens: 3000, OutputTokens: 50},
		{ID: 1, Arrival: 10 * ms, PromptTokens: 500, OutputTokens: 50},
		{ID: 2, Arrival: 20 * ms, PromptTokens: 3000, OutputTokens: 50},
	}
	cfg := l40s(t)
	sent, err := podreplay.Replay(cfg, reqs)
	if err != nil {
		t.Fatal(err)
	}
	cfg.HoldPrefillTokens = 4096
	held, err := podreplay.Replay(cfg, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].TTFT != held[0].TTFT {
		t.Fatalf("the first request's TTFT changed with holding: %v, then %v", sent[0].TTFT, held[0].TTFT)
	}
	if gain := sent[1].TTFT - held[1].TTFT; gain < 300*ms {
		t.Fatalf(
			"the short request's TTFT went from %v to %v with holding, want over 300 ms sooner",
			sent[1].TTFT,
			held[1].TTFT,
		)
	}
	if loss := held[2].TTFT - sent[2].TTFT; loss < 0 || loss > 50*ms {
		t.Fatalf("the held request's TTFT went from %v to %v, want at most 50 ms later", sent[2].TTFT, held[2].TTFT)
	}
	// Held until the first request's first token (it arrived at 0).
	if held[1].Held != 0 || held[2].Held != sent[0].TTFT-20*ms {
		t.Fatalf("held %v and %v, want 0 and %v", held[1].Held, held[2].Held, sent[0].TTFT-20*ms)
	}
	cfg.HoldReaction = 5 * ms
	late, err := podreplay.Replay(cfg, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if late[2].Held != held[2].Held+5*ms {
		t.Fatalf("with a 5 ms reaction held %v, want %v", late[2].Held, held[2].Held+5*ms)
	}

	delay, err := podreplay.LaterArrivalDelay(l40s(t), reqs)
	if err != nil {
		t.Fatal(err)
	}
	if delay[0] != 0 || delay[2] != 0 || delay[1] != sent[1].TTFT-held[1].TTFT {
		t.Fatalf("later-arrival delays %v, want 0, %v, 0", delay, sent[1].TTFT-held[1].TTFT)
	}
}

func TestReplayErrors(t *testing.T) {
	ok := []podreplay.Request{{ID: 1, PromptTokens: 10, OutputTokens: 1}}
	for _, tc := range []struct {
		name string
		edit func(*podreplay.Config)
		reqs []podreplay.Request
		want string
	}{
		{"negative hold", func(c *podreplay.Config) { c.HoldPrefillTokens = -1 }, ok, "HoldPrefillTokens"},
		{"negative reaction", func(c *podreplay.Config) { c.HoldReaction = -ms }, ok, "HoldReaction"},
		{"negative tick", func(c *podreplay.Config) { c.Tick = -ms }, ok, "Tick"},
		{"bad engine", func(c *podreplay.Config) { c.Engine.Profile.PrefillTokensPerSec = 0 }, ok, "PrefillTokensPerSec"},
		{"no output", func(*podreplay.Config) {}, []podreplay.Request{{ID: 4, PromptTokens: 10}}, "request 4"},
		{"no prompt, holding", func(c *podreplay.Config) { c.HoldPrefillTokens = 10 }, []podreplay.Request{{ID: 5, OutputTokens: 1}}, "request 5"},
		{"beyond the KV cache", func(*podreplay.Config) {}, []podreplay.Request{{ID: 6, PromptTokens: 10_000_000, OutputTokens: 1}}, "request 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := l40s(t)
			tc.edit(&cfg)
			_, err := podreplay.Replay(cfg, tc.reqs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
	if res, err := podreplay.Replay(l40s(t), nil); err != nil || len(res) != 0 {
		t.Fatalf("no requests: %v, %v", res, err)
	}
}
