package oracle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

// ErrNoPod is returned when a request fits in no pod's KV cache (the pods would answer 400).
var ErrNoPod = errors.New("oracle: request fits no pod")

// pod is one simulated pod: the server configuration its requests are converted with and the
// simulator of its engine.
type pod struct {
	cfg      server.Config
	sim      *engine.Simulator
	overhead time.Duration // API overhead: a request reaches the engine this long after it arrived
}

// newPods builds the fleet: pod i is modelsim's default server for cfg.Profiles[i], seeded i+1,
// serving w's model (and adapters with cfg.MaxLoras > 0), with the engine configuration
// server.New gives it.
func newPods(cfg Config, w *workload.Workload) ([]*pod, error) {
	pods := make([]*pod, len(cfg.Profiles))
	for i, name := range cfg.Profiles {
		sc := server.DefaultConfig()
		sc.Profile, sc.Model, sc.Seed, sc.MaxLoras = name, w.Model, uint64(i+1), cfg.MaxLoras
		if cfg.MaxLoras > 0 {
			for _, a := range w.Adapters {
				sc.LoRAs = append(sc.LoRAs, a.Name)
			}
		}
		if err := sc.Validate(); err != nil {
			return nil, fmt.Errorf("pod %d: %w", i, err)
		}
		prof, err := profile.Lookup(sc.Profile)
		if err != nil {
			return nil, fmt.Errorf("pod %d: %w", i, err)
		}
		ecfg := engine.DefaultConfig()
		ecfg.Profile, ecfg.MaxLoras, ecfg.Seed = prof, sc.EffectiveMaxLoras(), sc.Seed
		sim, err := engine.NewSimulator(ecfg)
		if err != nil {
			return nil, fmt.Errorf("pod %d: %w", i, err)
		}
		pods[i] = &pod{cfg: sc, sim: sim, overhead: prof.APIOverhead}
	}
	return pods, nil
}

// advance runs the pod's simulation up to the instant a request arriving at at reaches its engine.
func (p *pod) advance(at time.Duration) { p.sim.RunUntil(at + p.overhead) }

// Replay places reqs (a workload's generated requests, in arrival order) on the fleet of cfg,
// each on the pod that gives it the earliest first token (or on cfg.Assign's pod), then runs
// every pod to completion and reports each request's timings. w gives the model, adapters,
// endpoint and body settings the requests are sent with. It stops early with ctx's error.
func Replay(ctx context.Context, cfg Config, w *workload.Workload, reqs []workload.Request) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pods, err := newPods(cfg, w)
	if err != nil {
		return nil, err
	}
	placed := make([]placement, len(reqs))
	for i := range reqs {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if placed[i], err = place(cfg, pods, w, &reqs[i], i); err != nil {
			return nil, fmt.Errorf("request %d: %w", reqs[i].Index, err)
		}
		log.Debug("request placed", "index", reqs[i].Index, "pod", placed[i].pod,
			"predicted_ttft", placed[i].predicted)
	}
	for _, p := range pods {
		p.sim.Run()
	}
	return newReport(pods, reqs, placed), nil
}

// placement is where one request went and what the oracle predicted for it.
type placement struct {
	pod          int
	h            *engine.Handle
	predicted    time.Duration   // first token predicted at placement, from arrival (oracle, or Compare)
	candidates   []time.Duration // every pod's predicted first token (Compare), -1 out of reach
	promptTokens int
	rtt          time.Duration // round trip between the client and the pod (Config.Network)
}

// place converts request i, chooses its pod and submits it there.
func place(cfg Config, pods []*pod, w *workload.Workload, r *workload.Request, i int) (placement, error) {
	ereqs, err := engineRequests(pods, w, r)
	if err != nil {
		return placement{}, err
	}
	reach := func(pod int) (time.Duration, bool) {
		if cfg.Network == nil {
			return 0, true
		}
		return cfg.Network(r, pod)
	}
	var pl placement
	if cfg.Assign != nil {
		if pl.pod = cfg.Assign(i); pl.pod < 0 || pl.pod >= len(pods) {
			return placement{}, fmt.Errorf("oracle: assigned pod %d out of range [0, %d)", pl.pod, len(pods))
		}
		var ok bool
		if pl.rtt, ok = reach(pl.pod); !ok {
			return placement{}, fmt.Errorf("oracle: assigned pod %d is out of the request's reach", pl.pod)
		}
		if cfg.Compare {
			if pl.candidates, err = firstTokens(pods, r.At, ereqs, reach); err != nil {
				return placement{}, err
			}
			pl.predicted = pl.candidates[pl.pod]
		}
	} else if pl.pod, pl.predicted, pl.rtt, err = earliest(pods, r.At, ereqs, reach); err != nil {
		return placement{}, err
	}
	p := pods[pl.pod]
	pl.promptTokens = ereqs[pl.pod].PromptTokens
	p.advance(r.At)
	if pl.h, err = p.sim.Submit(r.At, ereqs[pl.pod]); err != nil {
		return placement{}, fmt.Errorf("pod %d: %w", pl.pod, err)
	}
	return pl, nil
}

// engineRequests converts r, as loadgen would send it, into each pod's engine request with
// modelsim's server code. The pods differ only in their seed, which matters only for a natural
// answer length (no max_tokens), so the conversion is shared unless the request has one.
func engineRequests(pods []*pod, w *workload.Workload, r *workload.Request) ([]engine.Request, error) {
	body, chat, err := encodeRequest(r, w.Stream, w.IgnoreEOS)
	if err != nil {
		return nil, err
	}
	out := make([]engine.Request, len(pods))
	for i, p := range pods {
		if i > 0 && out[0].FinishReason != "stop" {
			out[i] = out[0]
			continue
		}
		if out[i], err = p.cfg.EngineRequest(body, chat); err != nil {
			return nil, fmt.Errorf("pod %d: %w", i, err)
		}
	}
	return out, nil
}

// earliest advances every pod the request may reach to the arrival at, simulates the request on a
// clone of each and returns the pod whose first token reaches the client earliest (the lowest
// index among equals), the predicted time to first token and the pod's round trip.
func earliest(
	pods []*pod,
	at time.Duration,
	ereqs []engine.Request,
	reach func(int) (time.Duration, bool),
) (int, time.Duration, time.Duration, error) {
	fts, err := firstTokens(pods, at, ereqs, reach)
	if err != nil {
		return 0, 0, 0, err
	}
	best := -1
	for i, ft := range fts {
		if ft >= 0 && (best < 0 || ft < fts[best]) {
			best = i
		}
	}
	if best < 0 {
		return 0, 0, 0, ErrNoPod
	}
	rtt, _ := reach(best)
	return best, fts[best], rtt, nil
}

// firstTokens advances every pod the request may reach to the arrival at, simulates the request
// on a clone of each and returns, per pod, the time from at until its first token reaches the
// client (round trip included); -1 for a pod out of reach or whose KV cache it does not fit.
func firstTokens(
	pods []*pod,
	at time.Duration,
	ereqs []engine.Request,
	reach func(int) (time.Duration, bool),
) ([]time.Duration, error) {
	out := make([]time.Duration, len(pods))
	for i, p := range pods {
		out[i] = -1
		rtt, ok := reach(i)
		if !ok {
			continue
		}
		p.advance(at)
		c := p.sim.Clone()
		h, err := c.Submit(at, ereqs[i])
		if errors.Is(err, engine.ErrExceedsKV) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("pod %d: %w", i, err)
		}
		if !c.RunUntilFirstToken(h) {
			return nil, fmt.Errorf("pod %d: simulation ended without a first token", i)
		}
		out[i] = h.Progress().FirstToken + rtt - at
	}
	return out, nil
}
