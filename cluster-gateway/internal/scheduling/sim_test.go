package scheduling_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scheduling"
)

// A tiny deterministic fleet simulator on a virtual clock: each pod prefills one request at a
// time (FIFO) at its prefill rate, then decodes it concurrently with the others at an ITL that
// grows with the batch. The gateway side schedules, counts in-flight and reports responses just
// as the front doors do. No wall clock is involved.

type simProfile struct {
	prefill float64       // tokens per second
	itl     time.Duration // at batch 1
	kv      int           // KV capacity in tokens
}

var (
	fastGPU = simProfile{prefill: 30000, itl: 8 * time.Millisecond, kv: 400000}
	slowGPU = simProfile{prefill: 3000, itl: 30 * time.Millisecond, kv: 30000}
)

type simReq struct {
	req     *framework.Request
	pod     *simPod
	arrived time.Duration
	left    float64 // prefill tokens left
	out     int
	decoded float64
	ttft    time.Duration
	itl     time.Duration // the ITL it finished decoding at
}

type simPod struct {
	ep       *plugintest.FakeEndpoint
	p        simProfile
	queue    []*simReq
	decoding []*simReq
	served   int
}

type sim struct {
	t      *testing.T
	h      *plugintest.Handle
	s      *scheduling.Scheduler
	pods   []*simPod
	byAddr map[string]*simPod
	now    time.Duration
	done   []*simReq
	failed int
	// hold queues saturated requests in arrival order and retries them every step, as the front
	// door's flow control does; without it they count as failed.
	hold []held
	flow bool
	// critical is the share of requests sent at priority 1 (the rest at 0); the front door's
	// queue serves the higher priority first, as flow control's bands do.
	critical float64
	// slo, when set, gives every request latency objectives, and sheddable the share sent at
	// priority -1; refused counts the requests the scheduler refused as unattainable.
	slo       framework.SLO
	sheddable float64
	refused   int
}

func newSim(t *testing.T, profile string, fleet []simProfile) *sim {
	t.Helper()
	sm := &sim{t: t, h: plugintest.NewHandle(), byAddr: map[string]*simPod{}}
	var eps []*plugintest.FakeEndpoint
	for i, p := range fleet {
		e := plugintest.Endpoint(fmt.Sprintf("10.0.0.%d:8000", i+1), "m", 0, 0, 0, plugintest.Epoch)
		pod := &simPod{ep: e, p: p}
		sm.pods = append(sm.pods, pod)
		sm.byAddr[e.Meta().Address] = pod
		eps = append(eps, e)
	}
	sm.h.Set(plugintest.Endpoints(eps...)...)
	cfg := scheduling.DefaultConfig()
	cfg.Profile = profile
	cfg.Now = sm.h.Now
	s, err := scheduling.New(cfg, sm.h, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sm.s = s
	return sm
}

// send schedules one request and hands it to the chosen pod.
func (sm *sim) send(prompt, out, priority int) {
	h := held{&framework.Request{Model: "m", BaseModel: "m", PromptTokens: prompt, MaxTokens: out, Priority: priority,
		SLO: sm.slo, Arrived: sm.h.Now()}, sm.now}
	if sm.flow && slices.ContainsFunc(sm.hold, func(o held) bool { return o.req.Priority >= priority }) {
		sm.holdBack(h) // first come, first served behind the queue at its priority or above
		return
	}
	if !sm.place(h) {
		if sm.flow {
			sm.holdBack(h)
			return
		}
		sm.failed++
	}
}

// holdBack queues h behind every held request at its priority or above, ahead of those below,
// so the hold queue stays in the order flow control's bands serve it.
func (sm *sim) holdBack(h held) {
	i := len(sm.hold)
	for i > 0 && sm.hold[i-1].req.Priority < h.req.Priority {
		i--
	}
	sm.hold = slices.Insert(sm.hold, i, h)
}

// held is a request and when it arrived at the gateway.
type held struct {
	req     *framework.Request
	arrived time.Duration
}

// place schedules h's request and hands it to the chosen pod; false when every pod is saturated.
func (sm *sim) place(h held) bool {
	req := h.req
	res, err := sm.s.Schedule(context.Background(), req)
	if errors.Is(err, scheduling.ErrSLOUnattainable) {
		sm.refused++
		return true // answered (429), not held
	}
	if err != nil {
		if !errors.Is(err, scheduling.ErrSaturated) {
			sm.t.Fatalf("schedule: %v", err)
		}
		return false
	}
	pod := sm.byAddr[res.Targets[0].Meta().Address]
	sm.s.PreRequest(context.Background(), req, res)
	pod.ep.AddInFlight(1)
	pod.served++
	pod.queue = append(
		pod.queue,
		&simReq{req: req, pod: pod, arrived: h.arrived, left: float64(req.PromptTokens), out: req.MaxTokens},
	)
	return true
}

// retry places held requests, highest priority first and oldest first within a priority (the
// order holdBack keeps), until one is still saturated.
func (sm *sim) retry() {
	for len(sm.hold) > 0 && sm.place(sm.hold[0]) {
		sm.hold = sm.hold[1:]
	}
}

// step advances the virtual clock by dt.
func (sm *sim) step(dt time.Duration) {
	sm.now += dt
	sm.h.Advance(dt)
	for _, p := range sm.pods {
		sm.prefill(p, dt)
		sm.decode(p, dt)
	}
}

func (sm *sim) prefill(p *simPod, dt time.Duration) {
	budget := p.p.prefill * dt.Seconds()
	for budget > 0 && len(p.queue) > 0 {
		r := p.queue[0]
		use := math.Min(budget, r.left)
		r.left -= use
		budget -= use
		if r.left <= 0 {
			r.ttft = sm.now - r.arrived
			p.queue = p.queue[1:]
			p.decoding = append(p.decoding, r)
			sm.s.FirstToken(context.Background(), r.req, &framework.ResponseInfo{
				Endpoint: p.ep, Status: 200, CachedTokens: -1, PromptTokens: r.req.PromptTokens, TTFT: r.ttft,
			})
		}
	}
}

func (sm *sim) decode(p *simPod, dt time.Duration) {
	itl := time.Duration(float64(p.p.itl) * (1 + float64(len(p.decoding))/64))
	kept := p.decoding[:0]
	for _, r := range p.decoding {
		r.decoded += float64(dt) / float64(itl)
		if r.decoded < float64(r.out) {
			kept = append(kept, r)
			continue
		}
		sm.finish(r, itl)
	}
	p.decoding = kept
}

func (sm *sim) finish(r *simReq, itl time.Duration) {
	r.itl = itl
	r.pod.ep.AddInFlight(-1)
	sm.s.PostResponse(context.Background(), r.req, &framework.ResponseInfo{
		Endpoint: r.pod.ep, Status: 200, CachedTokens: -1, PromptTokens: r.req.PromptTokens,
		OutputTokens: r.out, TTFT: r.ttft, MeanITL: itl,
	})
	sm.done = append(sm.done, r)
}

// scrape publishes every pod's current state as its metrics.
func (sm *sim) scrape() {
	for _, p := range sm.pods {
		used := 0
		for _, r := range p.decoding {
			used += r.req.PromptTokens + int(r.decoded)
		}
		kv := math.Min(1, float64(used)/float64(p.p.kv))
		// As vLLM counts them: the request being prefilled is running, the rest of the queue waits.
		prefilling := min(1, len(p.queue))
		plugintest.SetLoad(p.ep, len(p.queue)-prefilling, len(p.decoding)+prefilling, kv, sm.h.Now())
	}
}

// run sends Poisson arrivals for dur at rate per second times shape(now) (nil: constant; shape
// must stay within [0, peak]), then drains, scraping every 50ms.
func (sm *sim) run(seed uint64, rate float64, dur time.Duration, shape func(time.Duration) float64, peak float64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	const dt = 2 * time.Millisecond
	if shape == nil {
		shape, peak = func(time.Duration) float64 { return 1 }, 1
	}
	gap := func() time.Duration { return time.Duration(rng.ExpFloat64() / (rate * peak) * float64(time.Second)) }
	next := gap()
	for sm.now < dur+60*time.Second && (sm.now < dur || sm.inSystem() > 0 || len(sm.hold) > 0) {
		for sm.now < dur && next <= sm.now {
			prompt := int(math.Min(4000, math.Max(50, 1000*math.Exp(0.5*rng.NormFloat64()-0.125))))
			out := 100 + rng.IntN(200)
			priority := 0
			if sm.critical > 0 && rng.Float64() < sm.critical {
				priority = 1
			}
			if sm.sheddable > 0 && rng.Float64() < sm.sheddable {
				priority = -1
			}
			if rng.Float64()*peak < shape(next) {
				sm.send(prompt, out, priority)
			}
			next += gap()
		}
		sm.step(dt)
		if sm.now%(50*time.Millisecond) == 0 {
			sm.scrape()
		}
		sm.retry()
	}
}

func (sm *sim) inSystem() int {
	n := 0
	for _, p := range sm.pods {
		n += len(p.queue) + len(p.decoding)
	}
	return n
}

func (sm *sim) ttftPercentile(q float64) time.Duration {
	return sm.ttftPercentileOf(q, func(*simReq) bool { return true })
}

// ttftPercentileOf is the q-quantile TTFT of the completed requests that match.
func (sm *sim) ttftPercentileOf(q float64, match func(*simReq) bool) time.Duration {
	ts := make([]time.Duration, 0, len(sm.done))
	for _, r := range sm.done {
		if match(r) {
			ts = append(ts, r.ttft)
		}
	}
	slices.Sort(ts)
	if len(ts) == 0 {
		return 0
	}
	return ts[int(q*float64(len(ts)-1))]
}

func mixedFleet() []simProfile {
	return []simProfile{fastGPU, fastGPU, fastGPU, fastGPU, slowGPU, slowGPU, slowGPU, slowGPU}
}

// slowShare is the fraction of completed requests served by the slow pods.
func (sm *sim) slowShare() float64 {
	slow := 0
	for _, r := range sm.done {
		if r.pod.p.prefill < fastGPU.prefill {
			slow++
		}
	}
	return float64(slow) / float64(max(1, len(sm.done)))
}
