package publish

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/gossip/sketch"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// minSketchItems is the smallest capacity a prefix sketch is sized for, so that a model with
// few hot prefixes still gets a filter with a low false-positive rate.
const minSketchItems = 64

// modelAcc accumulates one base model's figures over its pods.
type modelAcc struct {
	mc              *gossipv1.ModelCapacity
	saturated       int
	prefill, decode float64
	best, bestSat   time.Duration // smallest TTFT on an unsaturated / saturated pod; -1 = none
	sum, sumSat     time.Duration // summed TTFT over the unsaturated / saturated pods
	adapters        map[string]*gossipv1.AdapterCapacity
}

func newModelAcc(name string) *modelAcc {
	return &modelAcc{mc: &gossipv1.ModelCapacity{Name: name}, best: -1, bestSat: -1}
}

// Build returns the cluster's capacity summary as the gateway sees it now: one ModelCapacity per
// base model served by a discovered pod, sorted by name, with adapters sorted by name. Identity,
// sequence and generation time are left empty for the Sink to stamp. Build is safe for
// concurrent use.
func (p *Publisher) Build() *gossipv1.CapacitySummary {
	s := p.build(p.now())
	p.addSketches(s)
	return s
}

// Capacity returns the cluster's capacity as Build does, without the prefix sketches: the
// figures the autoscaling signal is derived from. Safe for concurrent use, with or without Run.
func (p *Publisher) Capacity() *gossipv1.CapacitySummary { return p.build(p.now()) }

// build returns the summary without prefix sketches: they never decide whether to publish, so
// they are only added to summaries that are published.
func (p *Publisher) build(now time.Time) *gossipv1.CapacitySummary {
	accs := make(map[string]*modelAcc)
	for _, e := range p.view.Endpoints() {
		mods := e.Models()
		if mods == nil || mods.Base == "" {
			continue // what the pod serves is not known yet
		}
		a := accs[mods.Base]
		if a == nil {
			a = newModelAcc(mods.Base)
			accs[mods.Base] = a
		}
		if p.ready(e, now) {
			p.addPod(a, e, mods, now)
		}
	}
	out := &gossipv1.CapacitySummary{Models: make([]*gossipv1.ModelCapacity, 0, len(accs))}
	for _, name := range slices.Sorted(maps.Keys(accs)) {
		out.Models = append(out.Models, p.finish(accs[name]))
	}
	return out
}

// ready reports whether e counts toward capacity: fresh metrics, last scrape fine, not ejected.
func (p *Publisher) ready(e framework.Endpoint, now time.Time) bool {
	return e.Metrics() != nil && !e.Ejected(now) && !e.Stale(now, p.cfg.Saturation.Staleness)
}

// addPod adds one ready pod's figures to its model.
func (p *Publisher) addPod(a *modelAcc, e framework.Endpoint, mods *framework.Models, now time.Time) {
	m := e.Metrics()
	mc := a.mc
	mc.ReadyPods++
	total := max(0, m.KVTotalTokens())
	used := min(1, max(0, m.KVUsage))
	mc.TotalKvTokens += uint64(total)
	mc.FreeKvTokens += uint64(math.Round(float64(total) * (1 - used)))
	mc.QueueDepth += uint32(max(0, m.WaitingQueue))
	mc.Running += uint32(max(0, m.Running))
	prefill, decode := p.speed(e)
	a.prefill += prefill
	a.decode += decode
	ttft := p.predict(e, m, prefill, decode)
	if p.cfg.Saturation.Saturated(e, now) {
		a.saturated++
		a.bestSat = minTTFT(a.bestSat, ttft)
		a.sumSat += ttft
	} else {
		a.best = minTTFT(a.best, ttft)
		a.sum += ttft
	}
	a.addAdapters(m, mods)
}

func minTTFT(cur, d time.Duration) time.Duration {
	if cur < 0 || d < cur {
		return d
	}
	return cur
}

// addAdapters counts a pod's adapters. vLLM lists adapter names, not request counts, so a pod
// running (or queueing) requests for an adapter adds one to its running (or queue) figure: a
// lower bound.
func (a *modelAcc) addAdapters(m *framework.Metrics, mods *framework.Models) {
	for _, name := range mods.Adapters {
		a.adapter(name).ResidentPods++
	}
	for _, name := range m.ActiveAdapters {
		ac := a.adapter(name)
		ac.Running++
		if !slices.Contains(mods.Adapters, name) {
			ac.ResidentPods++
		}
	}
	for _, name := range m.WaitingAdapters {
		a.adapter(name).QueueDepth++
	}
}

func (a *modelAcc) adapter(name string) *gossipv1.AdapterCapacity {
	if a.adapters == nil {
		a.adapters = make(map[string]*gossipv1.AdapterCapacity)
	}
	ac := a.adapters[name]
	if ac == nil {
		ac = &gossipv1.AdapterCapacity{Name: name}
		a.adapters[name] = ac
	}
	return ac
}

// finish derives the model's saturation, TTFT, gateway queue and adapters. The predicted TTFT is
// the best unsaturated pod's (where the scheduler would send the request), or the best saturated
// pod's when every pod is saturated; the mean predicted TTFT is over the same pods.
func (p *Publisher) finish(a *modelAcc) *gossipv1.ModelCapacity {
	mc := a.mc
	share, all := framework.SaturatedShare(a.saturated, int(mc.ReadyPods))
	mc.Saturation, mc.Saturated = float32(share), all
	best, sum, n := a.best, a.sum, int(mc.ReadyPods)-a.saturated
	if best < 0 {
		best, sum, n = a.bestSat, a.sumSat, a.saturated
	}
	if best > 0 {
		mc.PredictedTtftMs = float32(best.Seconds() * 1000)
		mc.MeanPredictedTtftMs = float32(sum.Seconds() * 1000 / float64(n))
	}
	mc.PrefillTokensPerSecond = float32(a.prefill)
	mc.DecodeTokensPerSecond = float32(a.decode)
	mc.QueueDepth += p.gatewayQueue(mc.Name)
	mc.Adapters = p.adapterList(a.adapters)
	return mc
}

// adapterList returns the adapters sorted by name, with the gateway's queue added.
func (p *Publisher) adapterList(adapters map[string]*gossipv1.AdapterCapacity) []*gossipv1.AdapterCapacity {
	if len(adapters) == 0 {
		return nil
	}
	out := make([]*gossipv1.AdapterCapacity, 0, len(adapters))
	for _, name := range slices.Sorted(maps.Keys(adapters)) {
		ac := adapters[name]
		ac.QueueDepth += p.gatewayQueue(name)
		out = append(out, ac)
	}
	return out
}

// gatewayQueue returns the requests for model waiting in the gateway's flow-control queue.
func (p *Publisher) gatewayQueue(model string) uint32 {
	if p.opts.Queue == nil {
		return 0
	}
	return uint32(max(0, p.opts.Queue.Queued(model)))
}

// speed returns the pod's prefill and decode speed: measured, or the configured priors.
func (p *Publisher) speed(e framework.Endpoint) (prefill, decode float64) {
	if s := p.opts.Speeds; s != nil {
		if pf, dc, ok := s.Speed(e); ok && pf > 0 && dc > 0 {
			return pf, dc
		}
	}
	return p.cfg.PriorPrefillTokensPerSecond, p.cfg.PriorDecodeTokensPerSecond
}

// predict returns the reference request's TTFT on e: the TTFTPredictor's, or else overhead +
// the prefill of the waiting requests (each reference-sized) + one engine step (an ITL at the
// prior decode speed, as the predicted-ttft-scorer assumes before it has fitted how the pod's step
// grows with its batch) + its own prefill.
func (p *Publisher) predict(e framework.Endpoint, m *framework.Metrics, prefill, decode float64) time.Duration {
	if p.opts.Predictor != nil {
		return p.opts.Predictor.Predict(e, ReferencePromptTokens, 0)
	}
	ref := float64(ReferencePromptTokens)
	step := 1 / decode
	wait := float64(max(0, m.WaitingQueue))*ref/prefill + step
	sec := p.cfg.Overhead.Seconds() + wait + ref/prefill
	return time.Duration(sec * float64(time.Second))
}

// addSketches sets each model's prefix sketch.
func (p *Publisher) addSketches(s *gossipv1.CapacitySummary) {
	for _, mc := range s.GetModels() {
		mc.PrefixSketch = p.sketch(mc.GetName())
	}
}

// sketch returns a Bloom filter of the model's hot prefix-block hashes, or nil when there are none.
func (p *Publisher) sketch(model string) *gossipv1.PrefixSketch {
	if p.opts.Prefixes == nil || p.cfg.MaxHotPrefixes == 0 {
		return nil
	}
	hashes := p.opts.Prefixes.HotPrefixes(model, p.cfg.MaxHotPrefixes)
	if len(hashes) == 0 {
		return nil
	}
	hashes = hashes[:min(len(hashes), p.cfg.MaxHotPrefixes)]
	b, err := sketch.NewForCapacity(max(len(hashes), minSketchItems), p.cfg.SketchFalsePositiveRate, p.cfg.SketchSeed)
	if err != nil {
		return nil // unreachable: Validate bounds the rate and the count is positive
	}
	for _, h := range hashes {
		b.Add(h)
	}
	ps := b.Proto()
	ps.Source = p.opts.PrefixSketchSource
	if ps.Source == gossipv1.PrefixSketchSource_PREFIX_SKETCH_SOURCE_UNSPECIFIED {
		ps.Source = gossipv1.PrefixSketchSource_PREFIX_SKETCH_SOURCE_ROUTED
	}
	return ps
}
