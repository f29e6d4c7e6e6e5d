package clustertable

import (
	"slices"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
	"github.com/switchyard-dev/switchyard/gossip"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// candidates turns a gossip snapshot (the index's) into one entry per cluster, sorted by name, with the figures
// its summaries give for model. It needs no lock: the table's own state is applied afterwards.
// c.RTT holds the prior round trip until then.
//
// gossip.Node.Snapshot sorts by cluster, so each cluster's replicas are one contiguous run; a
// source that does not sort is sorted here, on a copy.
func (t *Table) candidates(snap []gossip.Summary, model string) []Entry {
	if !sortedByCluster(snap) {
		snap = slices.Clone(snap)
		slices.SortStableFunc(snap, func(a, b gossip.Summary) int { return strings.Compare(a.Cluster, b.Cluster) })
	}
	n := 0
	for i := range snap {
		if i == 0 || snap[i].Cluster != snap[i-1].Cluster {
			n++
		}
	}
	out := make([]Entry, n)
	urls := make([]string, 0, len(snap)) // every entry's URLs, one backing array
	for i, k := 0, 0; i < len(snap); k++ {
		j := i + 1
		for j < len(snap) && snap[j].Cluster == snap[i].Cluster {
			j++
		}
		urls = t.candidate(&out[k], snap[i:j], model, urls)
		out[k].at += i
		i = j
	}
	return out
}

func sortedByCluster(snap []gossip.Summary) bool {
	for i := 1; i < len(snap); i++ {
		if snap[i].Cluster < snap[i-1].Cluster {
			return false
		}
	}
	return true
}

// candidate fills in one cluster's entry e (zero) from its replicas' summaries (reps, at least
// one); it appends the fresh replicas' URLs to urls and returns it.
func (t *Table) candidate(e *Entry, reps []gossip.Summary, model string, urls []string) []string {
	best := &reps[0]
	for i := range reps[1:] {
		if fresher(reps[i+1], *best) {
			best, e.at = &reps[i+1], i+1
		}
	}
	e.Summary, e.Age, e.best = best.Summary, best.Age, best
	urls, e.URLs = freshURLs(reps, urls)
	c := &e.Cluster
	c.Name, c.Region = best.Cluster, best.Region
	c.Stale = best.Stale || len(e.URLs) == 0
	c.Drained = t.drains != nil && t.drains.Drained(c.Name, best.Region)
	c.RTT = t.priorRTT(best)
	e.model = findModel(best.Summary, model)
	if e.model == nil {
		return urls
	}
	c.Lists = true
	c.Serves = e.model.GetReadyPods() > 0 // an adapter not resident yet is loaded on demand
	fillCapacity(c, e.model)
	return urls
}

// freshURLs appends the URLs of the fresh replicas among reps to urls, newest summary first, and
// returns urls and the part appended (nil when none).
func freshURLs(reps []gossip.Summary, urls []string) (all, added []string) {
	start := len(urls)
	var buf [8]int
	order := buf[:0] // replica indices, newest first: insertion sort, a cluster has a few replicas
	for i := range reps {
		if reps[i].Stale || reps[i].Summary.GetGatewayUrl() == "" {
			continue
		}
		order = append(order, i)
		for k := len(order) - 1; k > 0 && fresher(reps[order[k]], reps[order[k-1]]); k-- {
			order[k], order[k-1] = order[k-1], order[k]
		}
	}
	for _, i := range order {
		urls = append(urls, reps[i].Summary.GetGatewayUrl())
	}
	if len(urls) == start {
		return urls, nil
	}
	return urls, urls[start:len(urls):len(urls)]
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

// fillCapacity copies a model's figures into the routing candidate (all but the cached prefix,
// which matchSketches fills in).
func fillCapacity(c *routing.Cluster, mc *gossipv1.ModelCapacity) {
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
	if c.ReadyPods > 0 && mc.GetDecodeTokensPerSecond() > 0 {
		c.StepTime = time.Duration(float64(c.ReadyPods) / float64(mc.GetDecodeTokensPerSecond()) * float64(time.Second))
	}
	c.BaseTTFT = waitPart(mc.GetPredictedTtftMs(), c.PrefillTokensPerSec)
	if mc.GetMeanPredictedTtftMs() > 0 {
		c.MeanTTFT = max(waitPart(mc.GetMeanPredictedTtftMs(), c.PrefillTokensPerSec), c.BaseTTFT)
	}
}

// waitPart returns the wait in a predicted reference-request TTFT of ms milliseconds: the
// prediction less the reference prompt's prefill at rate tokens/s per pod (when known).
func waitPart(ms float32, rate float64) time.Duration {
	ttft := time.Duration(float64(ms) * float64(time.Millisecond))
	if rate > 0 {
		ttft -= time.Duration(referencePromptTokens / rate * float64(time.Second))
	}
	return max(ttft, 0)
}

// priorRTT is the round trip known before any request is measured: configured for the region,
// else 0 inside the router's region, else gossip's network-coordinate estimate.
func (t *Table) priorRTT(s *gossip.Summary) time.Duration {
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
