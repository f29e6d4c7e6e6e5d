package autoscale

import (
	"math"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Signal names, as the switchyard_gateway_autoscale_ratio metric labels them.
const (
	SignalKV    = "kv"
	SignalQueue = "queue"
	SignalTTFT  = "ttft"
)

// Ratios are a pool's figures over their targets: 1 is a pool sized right on that signal.
type Ratios struct {
	KV, Queue, TTFT float64
}

// Max returns the highest ratio and its signal.
func (r Ratios) Max() (float64, string) {
	best, name := r.KV, SignalKV
	if r.Queue > best {
		best, name = r.Queue, SignalQueue
	}
	if r.TTFT > best {
		best, name = r.TTFT, SignalTTFT
	}
	return best, name
}

// Recommendation is one model's signal at one step.
type Recommendation struct {
	// Model is the base model.
	Model string
	// Ready is the pool's ready pods (the replica count the ratios are relative to).
	Ready int
	// Ratios are the pool's figures over their targets.
	Ratios Ratios
	// Raw is this step's count before the scale-down window; Desired the published count.
	Raw, Desired int
}

// ratiosOf returns mc's figures over cfg's targets.
func ratiosOf(cfg Config, mc *gossipv1.ModelCapacity) Ratios {
	var r Ratios
	if mc.TotalKvTokens > 0 {
		used := float64(mc.TotalKvTokens-min(mc.FreeKvTokens, mc.TotalKvTokens)) / float64(mc.TotalKvTokens)
		r.KV = used / cfg.TargetKVUtilization
	}
	if mc.ReadyPods > 0 {
		r.Queue = float64(mc.QueueDepth) / float64(mc.ReadyPods) / cfg.TargetQueuePerPod
	}
	if cfg.TargetTTFT > 0 && mc.MeanPredictedTtftMs > 0 {
		r.TTFT = float64(mc.MeanPredictedTtftMs) / 1000 / cfg.TargetTTFT.Seconds()
	}
	return r
}

// rawDesired returns the replica count mc's figures ask for, before the scale-down window and the
// min/max bounds.
func rawDesired(cfg Config, mc *gossipv1.ModelCapacity, r Ratios) int {
	ready := int(mc.ReadyPods)
	if ready == 0 {
		if mc.QueueDepth > 0 {
			return 1 // requests wait and nothing serves them
		}
		return 0
	}
	ratio, _ := r.Max()
	if math.Abs(ratio-1) <= cfg.Tolerance {
		return ready
	}
	want := math.Ceil(float64(ready) * ratio)
	limit := math.Max(math.Ceil(float64(ready)*cfg.MaxScaleUpFactor), float64(ready+4))
	return int(math.Min(want, math.Min(limit, maxReplicas)))
}

// clamp bounds n to cfg's min and max replicas.
func clamp(cfg Config, n int) int {
	n = max(n, cfg.MinReplicas)
	if cfg.MaxReplicas > 0 {
		n = min(n, cfg.MaxReplicas)
	}
	return n
}
