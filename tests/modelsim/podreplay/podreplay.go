// Package podreplay replays the requests one pod served in a benchmark run through a fresh
// simulated engine of the same profile, to explain that pod's times to first token offline: what
// the engine alone makes of the same arrivals, how much of each request's wait came from requests
// that arrived after it (a later request admitted into the engine step that finishes an earlier
// one's prefill lengthens that step: chunked prefill fills each step's token budget, first come
// first served), and what a gateway that held requests back from a pod with prefill work in
// flight would have changed.
package podreplay

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
)

// Request is one request the pod served.
type Request struct {
	// ID is the caller's name for the request (a benchmark's request index).
	ID int
	// Arrival is the simulated time the request reached the pod.
	Arrival time.Duration
	// PromptTokens and OutputTokens are its prompt length and the tokens it generated (> 0).
	PromptTokens, OutputTokens int
}

// Config configures a replay.
type Config struct {
	// Engine is the simulated pod (profile, seed, watermark).
	Engine engine.Config
	// HoldPrefillTokens, when above zero, replays a gateway that holds a request back while the
	// pod has requests sent to it without a first token, and their prompt tokens plus the
	// request's would exceed HoldPrefillTokens (an idle pod takes any request). Held requests
	// leave first come, first served. Default 0: every request is sent when it arrives.
	HoldPrefillTokens int
	// HoldReaction is how long a held request takes to reach the pod once a first token has made
	// room (the gateway learning of it and sending the request on). Default 0.
	HoldReaction time.Duration
	// Tick is the time resolution of a replay with holding. Default 1 ms.
	Tick time.Duration
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if err := c.Engine.Validate(); err != nil {
		return fmt.Errorf("podreplay: %w", err)
	}
	switch {
	case c.HoldPrefillTokens < 0:
		return fmt.Errorf("podreplay: HoldPrefillTokens must not be negative, got %d", c.HoldPrefillTokens)
	case c.HoldReaction < 0:
		return fmt.Errorf("podreplay: HoldReaction must not be negative, got %v", c.HoldReaction)
	case c.Tick < 0:
		return fmt.Errorf("podreplay: Tick must not be negative, got %v", c.Tick)
	}
	return nil
}

// Result is one request's replayed outcome.
type Result struct {
	ID int
	// TTFT is from the request's arrival to its first token.
	TTFT time.Duration
	// Held is how long the request was held back before it was sent to the pod (holding only).
	Held time.Duration
}

// maxHold bounds how long a replay with holding runs past the last arrival.
const maxHold = time.Hour

// ErrNoFirstToken is returned when a replayed request never gets a first token (it cannot fit in
// the pod's KV cache).
var ErrNoFirstToken = errors.New("podreplay: a request got no first token")

// Replay replays reqs (in any order) on one fresh simulated pod and returns their outcomes in
// arrival order.
func Replay(cfg Config, reqs []Request) ([]Result, error) {
	if err := check(cfg, reqs); err != nil {
		return nil, err
	}
	return replay(cfg, sorted(reqs))
}

// check validates cfg and reqs.
func check(cfg Config, reqs []Request) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	for _, r := range reqs {
		if r.PromptTokens <= 0 || r.OutputTokens <= 0 {
			return fmt.Errorf(
				"podreplay: request %d: prompt and output tokens must be positive, got %d and %d",
				r.ID,
				r.PromptTokens,
				r.OutputTokens,
			)
		}
	}
	return nil
}

// replay is Replay on checked requests in arrival order.
func replay(cfg Config, reqs []Request) ([]Result, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	if cfg.HoldPrefillTokens > 0 {
		return replayHeld(cfg, reqs)
	}
	sim, err := engine.NewSimulator(cfg.Engine)
	if err != nil {
		return nil, fmt.Errorf("podreplay: %w", err)
	}
	hs := make([]*engine.Handle, len(reqs))
	for i, r := range reqs {
		if hs[i], err = sim.Submit(r.Arrival, engineRequest(r)); err != nil {
			return nil, fmt.Errorf("podreplay: request %d: %w", r.ID, err)
		}
	}
	sim.Run()
	out := make([]Result, len(reqs))
	for i, r := range reqs {
		p := hs[i].Progress()
		if p.Generated == 0 {
			return nil, fmt.Errorf("%w: request %d", ErrNoFirstToken, r.ID)
		}
		out[i] = Result{ID: r.ID, TTFT: p.FirstToken - r.Arrival}
	}
	return out, nil
}

// replayHeld replays reqs (sorted, valid) with holding, advancing the simulation Tick by Tick.
func replayHeld(cfg Config, reqs []Request) ([]Result, error) {
	tick := cfg.Tick
	if tick <= 0 {
		tick = time.Millisecond
	}
	sim, err := engine.NewSimulator(cfg.Engine)
	if err != nil {
		return nil, fmt.Errorf("podreplay: %w", err)
	}
	type sent struct {
		h      *engine.Handle
		tokens int
	}
	out := make([]Result, len(reqs))
	hs := make([]*engine.Handle, len(reqs))
	held := make([]bool, len(reqs))
	var inFlight []sent           // sent without a first token known at the current time
	lastFirst := time.Duration(0) // the latest first token known
	queue, next := 0, 0           // reqs[queue:next] have arrived and wait to be sent
	limit := reqs[len(reqs)-1].Arrival + maxHold
	for now := time.Duration(0); queue < len(reqs); now += tick {
		if now > limit {
			return nil, fmt.Errorf("%w: request %d held for over %v", ErrNoFirstToken, reqs[queue].ID, maxHold)
		}
		for next < len(reqs) && reqs[next].Arrival <= now {
			next++
		}
		backlog := 0
		kept := inFlight[:0]
		for _, s := range inFlight {
			if p := s.h.Progress(); p.Generated > 0 && p.FirstToken <= now {
				lastFirst = max(lastFirst, p.FirstToken)
				continue
			}
			backlog += s.tokens
			kept = append(kept, s)
		}
		inFlight = kept
		for ; queue < next; queue++ {
			r := reqs[queue]
			if backlog > 0 && backlog+r.PromptTokens > cfg.HoldPrefillTokens {
				held[queue] = true
				break
			}
			at := r.Arrival
			if held[queue] { // let go by the first token that made room
				if at = max(r.Arrival, lastFirst+cfg.HoldReaction); at > now {
					break
				}
			}
			h, err := sim.Submit(at, engineRequest(r))
			if err != nil {
				return nil, fmt.Errorf("podreplay: request %d: %w", r.ID, err)
			}
			hs[queue], out[queue] = h, Result{ID: r.ID, Held: at - r.Arrival}
			inFlight = append(inFlight, sent{h: h, tokens: r.PromptTokens})
			backlog += r.PromptTokens
		}
		sim.RunUntil(now + tick)
	}
	sim.Run()
	for i, r := range reqs {
		p := hs[i].Progress()
		if p.Generated == 0 {
			return nil, fmt.Errorf("%w: request %d", ErrNoFirstToken, r.ID)
		}
		out[i].TTFT = p.FirstToken - r.Arrival
	}
	return out, nil
}

// LaterArrivalDelay returns, for each request of reqs in arrival order, how much sooner its first
// token would have come had none of the requests that arrived after it been sent to the pod:
// TTFT in the full replay less TTFT in a replay of the requests up to it. First come, first
// served, a later request can delay an earlier one only by sharing its engine steps (a prefill
// chunk in the step that finishes the earlier one's prefill, or one more sequence decoding).
// Holding is not applied. It replays the sequence once per request.
func LaterArrivalDelay(cfg Config, reqs []Request) ([]time.Duration, error) {
	cfg.HoldPrefillTokens = 0
	if err := check(cfg, reqs); err != nil {
		return nil, err
	}
	reqs = sorted(reqs)
	full, err := replay(cfg, reqs)
	if err != nil {
		return nil, err
	}
	out := make([]time.Duration, len(reqs))
	for i := range reqs {
		alone, err := replay(cfg, reqs[:i+1])
		if err != nil {
			return nil, err
		}
		out[i] = full[i].TTFT - alone[i].TTFT
	}
	return out, nil
}

// sorted returns reqs in arrival order (stable), not modifying reqs.
func sorted(reqs []Request) []Request {
	out := slices.Clone(reqs)
	slices.SortStableFunc(out, func(a, b Request) int {
		switch {
		case a.Arrival < b.Arrival:
			return -1
		case a.Arrival > b.Arrival:
			return 1
		}
		return 0
	})
	return out
}

// engineRequest turns r into an engine request whose prompt matches no other's prefix blocks:
// the replay knows lengths, not texts, so nothing is served from the prefix cache.
func engineRequest(r Request) engine.Request {
	return engine.Request{
		Model:        "replay",
		Prompt:       fmt.Appendf(nil, "request %d", r.ID), // shorter than one block: never cached
		PromptTokens: r.PromptTokens,
		MaxTokens:    r.OutputTokens,
	}
}
