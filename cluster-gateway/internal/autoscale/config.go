package autoscale

import (
	"errors"
	"fmt"
	"time"
)

// Config is how the desired replica count of a model's pool is derived. The defaults are
// DefaultConfig's.
type Config struct {
	// Interval is how often the recommendation is recomputed. Default 5 s.
	Interval time.Duration
	// TargetKVUtilization is the share of the pool's KV cache in use that one replica count is
	// sized for: 0.9 used over a target of 0.75 asks for 1.2× the ready pods. Default 0.75.
	TargetKVUtilization float64
	// TargetQueuePerPod is the requests waiting per ready pod (in the pods' queues and the
	// gateway's flow-control queue) the pool is sized for. Default 2.
	TargetQueuePerPod float64
	// TargetTTFT is the mean predicted time to first token over the pool's pods the pool is
	// sized for; 0 leaves TTFT out. Default 2 s.
	TargetTTFT time.Duration
	// Tolerance is the band around a ratio of 1 within which the pool is left as it is
	// (Kubernetes' HPA uses 0.1). Default 0.1.
	Tolerance float64
	// ScaleDownWindow is how long a lower recommendation must hold before it is published: the
	// published count is the highest computed over the window, so a short lull does not shed
	// pods a burst needs again (HPA's scale-down stabilisation). 0 scales down at once. Default
	// 5 min.
	ScaleDownWindow time.Duration
	// MaxScaleUpFactor bounds one recommendation to max(ready × factor, ready + 4), as HPA's
	// default scale-up policy does, so one noisy reading cannot ask for a fleet. Default 2.
	MaxScaleUpFactor float64
	// MinReplicas and MaxReplicas bound the recommendation; MaxReplicas 0 is unbounded.
	// Defaults 1 and 0.
	MinReplicas int
	MaxReplicas int
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Interval:            5 * time.Second,
		TargetKVUtilization: 0.75,
		TargetQueuePerPod:   2,
		TargetTTFT:          2 * time.Second,
		Tolerance:           0.1,
		ScaleDownWindow:     5 * time.Minute,
		MaxScaleUpFactor:    2,
		MinReplicas:         1,
	}
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("autoscale interval %v: want > 0", c.Interval))
	}
	if !(c.TargetKVUtilization > 0 && c.TargetKVUtilization <= 1) {
		errs = append(errs, fmt.Errorf("autoscale target KV utilization %v: want in (0, 1]", c.TargetKVUtilization))
	}
	if !(c.TargetQueuePerPod > 0) || c.TargetQueuePerPod > 1e6 {
		errs = append(errs, fmt.Errorf("autoscale target queue per pod %v: want in (0, 1e6]", c.TargetQueuePerPod))
	}
	if c.TargetTTFT < 0 {
		errs = append(errs, fmt.Errorf("autoscale target TTFT %v: want >= 0 (0: not used)", c.TargetTTFT))
	}
	if !(c.Tolerance >= 0 && c.Tolerance < 1) {
		errs = append(errs, fmt.Errorf("autoscale tolerance %v: want in [0, 1)", c.Tolerance))
	}
	if c.ScaleDownWindow < 0 || c.ScaleDownWindow > 24*time.Hour {
		errs = append(errs, fmt.Errorf("autoscale scale-down window %v: want in [0, 24h]", c.ScaleDownWindow))
	}
	if !(c.MaxScaleUpFactor > 1) || c.MaxScaleUpFactor > 100 {
		errs = append(errs, fmt.Errorf("autoscale max scale-up factor %v: want in (1, 100]", c.MaxScaleUpFactor))
	}
	if c.MinReplicas < 0 || c.MinReplicas > maxReplicas {
		errs = append(errs, fmt.Errorf("autoscale min replicas %d: want in [0, %d]", c.MinReplicas, maxReplicas))
	}
	if c.MaxReplicas < 0 || c.MaxReplicas > maxReplicas {
		errs = append(errs, fmt.Errorf("autoscale max replicas %d: want in [0, %d] (0: unbounded)", c.MaxReplicas,
			maxReplicas))
	} else if c.MaxReplicas > 0 && c.MaxReplicas < c.MinReplicas {
		errs = append(errs, fmt.Errorf("autoscale max replicas %d: below the min replicas %d", c.MaxReplicas,
			c.MinReplicas))
	}
	return errors.Join(errs...)
}

// maxReplicas bounds every count the package publishes.
const maxReplicas = 100000
