package publish

import (
	"math"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Reasons a summary is significantly different from the last one published.
const (
	changeModels     = "models"
	changeReadyPods  = "ready_pods"
	changeSaturation = "saturation"
	changeKV         = "kv"
	changeQueue      = "queue"
	changeTTFT       = "ttft"
	changeAdapters   = "adapters"
)

// change returns why next differs significantly from prev, or "" when it does not. Running
// counts, speeds and the prefix sketch ride along with the next publish and never trigger one.
func (c *Config) change(prev, next *gossipv1.CapacitySummary) string {
	pm, nm := prev.GetModels(), next.GetModels()
	if len(pm) != len(nm) {
		return changeModels
	}
	for i := range nm {
		if pm[i].GetName() != nm[i].GetName() {
			return changeModels
		}
		if why := c.modelChange(pm[i], nm[i]); why != "" {
			return why
		}
	}
	return ""
}

// modelChange compares two figures of the same model.
func (c *Config) modelChange(p, n *gossipv1.ModelCapacity) string {
	switch {
	case p.GetReadyPods() != n.GetReadyPods():
		return changeReadyPods
	case p.GetSaturated() != n.GetSaturated() || p.GetSaturation() != n.GetSaturation():
		return changeSaturation
	case c.kvMoved(p, n):
		return changeKV
	case moved(p.GetQueueDepth(), n.GetQueueDepth(), c.QueueChange):
		return changeQueue
	case c.ttftMoved(p.GetPredictedTtftMs(), n.GetPredictedTtftMs()):
		return changeTTFT
	case c.adaptersChanged(p.GetAdapters(), n.GetAdapters()):
		return changeAdapters
	}
	return ""
}

// kvMoved reports whether free or total KV tokens moved by more than FreeKVChange of the total.
func (c *Config) kvMoved(p, n *gossipv1.ModelCapacity) bool {
	limit := c.FreeKVChange * float64(max(p.GetTotalKvTokens(), n.GetTotalKvTokens()))
	dFree := math.Abs(float64(n.GetFreeKvTokens()) - float64(p.GetFreeKvTokens()))
	dTotal := math.Abs(float64(n.GetTotalKvTokens()) - float64(p.GetTotalKvTokens()))
	return dFree > limit || dTotal > limit
}

func (c *Config) ttftMoved(p, n float32) bool {
	if (p == 0) != (n == 0) {
		return true
	}
	return math.Abs(float64(n-p)) > c.TTFTChange*float64(p)
}

// adaptersChanged reports a different adapter set, residency, or a queue moving by more than
// QueueChange.
func (c *Config) adaptersChanged(p, n []*gossipv1.AdapterCapacity) bool {
	if len(p) != len(n) {
		return true
	}
	for i := range n {
		if p[i].GetName() != n[i].GetName() || p[i].GetResidentPods() != n[i].GetResidentPods() ||
			moved(p[i].GetQueueDepth(), n[i].GetQueueDepth(), c.QueueChange) {
			return true
		}
	}
	return false
}

// moved reports whether a count changed by more than limit.
func moved(p, n uint32, limit int) bool {
	d := int64(n) - int64(p)
	return d > int64(limit) || -d > int64(limit)
}
