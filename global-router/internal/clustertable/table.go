// Package clustertable is the global router's view of every cluster: the newest fresh capacity
// summary among each cluster's gateway replicas (from gossip), this router's own passive health
// of each cluster (errors and refusals on forwarded requests), the requests it sent each cluster
// since that cluster's summary, and measured or configured round trips. It turns that view into
// routing candidates for one request.
package clustertable

import (
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/sketch"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Source provides gossip summaries. *gossip.Node implements it.
type Source interface {
	Snapshot() []gossip.Summary
}

// DrainView tells which clusters and regions an operator drained.
type DrainView interface {
	Drained(cluster, region string) bool
}

// Config tunes the table.
type Config struct {
	// Region is the router's own region.
	Region string
	// RTT sets the prior round trip to a region (simulated latency in the local stack, or a
	// known figure); regions not listed use gossip's network-coordinate estimate, and the
	// router's own region 0. Round trips measured on forwarded requests correct the prior
	// (see MeasuredRTT).
	RTT map[string]time.Duration
	// MeasuredRTT tunes the round trips measured on forwarded requests; zero fields take the
	// defaults of DefaultRTTConfig.
	MeasuredRTT RTTConfig
	// Ejection is the passive-health policy.
	Ejection EjectionConfig
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Rand returns a uniform number in [0,1) for slow start's admissions (default
	// math/rand/v2.Float64). It must be safe for concurrent use.
	Rand func() float64
}

// Table is safe for concurrent use.
type Table struct {
	cfg    Config
	src    Source
	drains DrainView

	mu     sync.Mutex
	health map[string]*health    // by cluster
	sends  map[string]*sendTimes // by cluster
	rtts   map[string]*rttMeter  // by cluster
}

// New returns a table over src. drains may be nil (nothing drained).
func New(cfg Config, src Source, drains DrainView) *Table {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.Ejection == (EjectionConfig{}) {
		cfg.Ejection = DefaultEjectionConfig()
	}
	cfg.MeasuredRTT = cfg.MeasuredRTT.withDefaults()
	return &Table{cfg: cfg, src: src, drains: drains, health: map[string]*health{}, sends: map[string]*sendTimes{},
		rtts: map[string]*rttMeter{}}
}

// Entry is one cluster in a view: its routing figures for one model and where to forward.
type Entry struct {
	Cluster routing.Cluster
	// URLs are the gateway replicas' URLs, freshest first.
	URLs []string
	// Summary is the chosen replica's summary (nil for a cluster known only as stale).
	Summary *gossipv1.CapacitySummary
	// Age of that summary.
	Age time.Duration
	// Share is the fraction of requests the cluster is offered while in slow start (1 outside
	// it); Withheld is true when slow start left it out of this view (it is then Unhealthy).
	Share    float64
	Withheld bool
}

// View returns every known cluster as a routing candidate for model (a base model or an adapter)
// whose prompt has the given prefix-block hashes.
func (t *Table) View(model string, prefixHashes []uint64) []Entry {
	snap := t.src.Snapshot()
	now := t.cfg.Now()
	byCluster := map[string][]gossip.Summary{}
	for _, s := range snap {
		byCluster[s.Cluster] = append(byCluster[s.Cluster], s)
	}
	names := make([]string, 0, len(byCluster))
	for n := range byCluster {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]Entry, 0, len(names))
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, name := range names {
		out = append(out, t.entry(name, byCluster[name], model, prefixHashes, now))
	}
	t.withhold(out, now)
	return out
}

// entry builds one cluster's candidate from its replicas' summaries.
func (t *Table) entry(name string, reps []gossip.Summary, model string, hashes []uint64, now time.Time) Entry {
	sort.SliceStable(reps, func(i, j int) bool { return fresher(reps[i], reps[j]) })
	best := reps[0]
	e := Entry{Summary: best.Summary, Age: best.Age}
	for _, r := range reps {
		if !r.Stale && r.Summary.GetGatewayUrl() != "" {
			e.URLs = append(e.URLs, r.Summary.GetGatewayUrl())
		}
	}
	c := &e.Cluster
	c.Name, c.Region = name, best.Region
	c.Stale = best.Stale || len(e.URLs) == 0
	c.Drained = t.drains != nil && t.drains.Drained(name, best.Region)
	h := t.healthOf(name)
	h.noteSignal(c.Stale, best.Node, now)
	c.Unhealthy = h.ejected(now)
	e.Share = h.share(now, t.cfg.Ejection.SlowStart)
	c.RTT = t.rtt(name, best, now)
	mc := findModel(best.Summary, model)
	if mc == nil {
		return e
	}
	c.Serves = mc.GetReadyPods() > 0 // an adapter not resident yet is loaded on demand
	fillCapacity(c, mc, hashes)
	c.InFlight = t.sendsOf(name).since(time.Unix(0, best.Summary.GetGeneratedAtUnixNano()))
	return e
}

// fresher orders replicas: fresh before stale, then newest first.
func fresher(a, b gossip.Summary) bool {
	if a.Stale != b.Stale {
		return !a.Stale
	}
	return a.Summary.GetGeneratedAtUnixNano() > b.Summary.GetGeneratedAtUnixNano()
}

// findModel returns the summary's capacity for model: the base model itself, or the base model
// of an adapter named model.
func findModel(s *gossipv1.CapacitySummary, model string) *gossipv1.ModelCapacity {
	for _, m := range s.GetModels() {
		if m.GetName() == model {
			return m
		}
	}
	for _, m := range s.GetModels() {
		for _, a := range m.GetAdapters() {
			if a.GetName() == model {
				return m
			}
		}
	}
	return nil
}

// referencePromptTokens is the prompt length of the reference request a summary's predicted TTFT
// is for (see the gossip proto).
const referencePromptTokens = 1000

// fillCapacity copies a model's figures into the routing candidate.
func fillCapacity(c *routing.Cluster, mc *gossipv1.ModelCapacity, hashes []uint64) {
	c.ReadyPods = int(mc.GetReadyPods())
	c.TotalKVTokens = int64(mc.GetTotalKvTokens())
	c.FreeKVTokens = int64(mc.GetFreeKvTokens())
	c.Queue = int(mc.GetQueueDepth())
	c.Running = int(mc.GetRunning())
	c.SaturatedFraction = float64(mc.GetSaturation())
	if mc.GetSaturated() {
		c.SaturatedFraction = 1
	}
	if c.ReadyPods > 0 && mc.GetPrefillTokensPerSecond() > 0 {
		c.PrefillTokensPerSec = float64(mc.GetPrefillTokensPerSecond()) / float64(c.ReadyPods)
	}
	ttft := time.Duration(float64(mc.GetPredictedTtftMs()) * float64(time.Millisecond))
	if c.PrefillTokensPerSec > 0 { // the wait part of the prediction: remove the reference prefill
		ttft -= time.Duration(referencePromptTokens / c.PrefillTokensPerSec * float64(time.Second))
	}
	c.BaseTTFT = max(ttft, 0)
	c.CachedPrefixTokens = cachedTokens(mc.GetPrefixSketch(), hashes)
}

// tokensPerBlock is the prefix contract's block size in tokens (64 bytes at ~4 bytes a token).
const tokensPerBlock = 16

func cachedTokens(ps *gossipv1.PrefixSketch, hashes []uint64) int {
	if ps == nil || len(hashes) == 0 {
		return 0
	}
	b, err := sketch.FromProto(ps)
	if err != nil {
		return 0
	}
	return b.LongestPrefix(hashes) * tokensPerBlock
}

// Models returns every base model and adapter served by a cluster with a fresh summary.
func (t *Table) Models() []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, s := range t.src.Snapshot() {
		if s.Stale {
			continue
		}
		for _, m := range s.Summary.GetModels() {
			if m.GetReadyPods() == 0 {
				continue
			}
			add(m.GetName())
			for _, a := range m.GetAdapters() {
				add(a.GetName())
			}
		}
	}
	sort.Strings(out)
	return out
}

// rtt is the cluster's round trip: the prior, corrected by what forwarded requests measured.
func (t *Table) rtt(cluster string, s gossip.Summary, now time.Time) time.Duration {
	prior := t.priorRTT(s)
	if t.cfg.MeasuredRTT.Off {
		return prior
	}
	return t.rtts[cluster].estimate(prior, now, t.cfg.MeasuredRTT)
}

// priorRTT is the round trip known before any request is measured: configured for the region,
// else 0 inside the router's region, else gossip's network-coordinate estimate.
func (t *Table) priorRTT(s gossip.Summary) time.Duration {
	if d, ok := t.cfg.RTT[s.Region]; ok {
		return d
	}
	if s.Region == t.cfg.Region {
		return 0
	}
	if s.RTTKnown {
		return s.RTT
	}
	return 0
}

// Observe records a forwarded request's outcome (forward.Observer): passive health, the round
// trip it measured, and, for an accepted request, that it was sent (it is not in the cluster's
// summary yet).
func (t *Table) Observe(o forward.Outcome) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.cfg.Now()
	t.healthOf(o.Target.Cluster).observe(o, now, t.cfg.Ejection)
	if o.RTT > 0 {
		t.rttOf(o.Target.Cluster).add(o.RTT, now, t.cfg.MeasuredRTT)
	}
	if o.Status > 0 && !o.Retried {
		t.sendsOf(o.Target.Cluster).add(now)
	}
}

// Sent records that a request was sent to cluster now.
func (t *Table) Sent(cluster string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sendsOf(cluster).add(t.cfg.Now())
}

func (t *Table) healthOf(cluster string) *health {
	h := t.health[cluster]
	if h == nil {
		h = &health{}
		t.health[cluster] = h
	}
	return h
}

func (t *Table) sendsOf(cluster string) *sendTimes {
	s := t.sends[cluster]
	if s == nil {
		s = &sendTimes{}
		t.sends[cluster] = s
	}
	return s
}

func (t *Table) rttOf(cluster string) *rttMeter {
	m := t.rtts[cluster]
	if m == nil {
		m = &rttMeter{}
		t.rtts[cluster] = m
	}
	return m
}
