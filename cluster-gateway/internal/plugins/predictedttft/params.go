package predictedttft

import (
	"fmt"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Params are the predicted-ttft-scorer's parameters.
type Params struct {
	// Overhead is the fixed per-request cost (API handling, first scheduler step). Default "5ms".
	Overhead *framework.Duration `json:"overhead,omitempty"`
	// PriorPrefillTokensPerSecond is the prefill speed assumed before any pod has been measured.
	// Default 10000. Once some pods are measured, an unmeasured pod gets their geometric mean.
	PriorPrefillTokensPerSecond float64 `json:"priorPrefillTokensPerSecond,omitempty"`
	// PriorITL is the inter-token latency assumed before any pod has been measured. Default "20ms".
	PriorITL *framework.Duration `json:"priorITL,omitempty"`
	// Alpha is the EWMA weight of a new sample once a pod has 1/Alpha samples. Default 0.2.
	Alpha float64 `json:"alpha,omitempty"`
	// AdapterLoad is the time to load a LoRA adapter that is not active on the pod (twice that
	// when every adapter slot is taken, as the request first waits for one). Default "100ms".
	AdapterLoad *framework.Duration `json:"adapterLoad,omitempty"`
}

// Config is the validated model configuration.
type Config struct {
	Overhead     time.Duration
	PriorPrefill float64 // tokens per second
	PriorITL     time.Duration
	Alpha        float64
	AdapterLoad  time.Duration
}

// DefaultConfig returns overhead 5ms, prior prefill 10,000 tokens/s, prior ITL 20ms, alpha 0.2,
// adapter load 100ms.
func DefaultConfig() Config {
	return Config{
		Overhead:     5 * time.Millisecond,
		PriorPrefill: 10000,
		PriorITL:     20 * time.Millisecond,
		Alpha:        0.2,
		AdapterLoad:  100 * time.Millisecond,
	}
}

func (p Params) config() (Config, error) {
	c := DefaultConfig()
	if p.Overhead != nil {
		c.Overhead = p.Overhead.Duration
	}
	if p.PriorPrefillTokensPerSecond != 0 {
		c.PriorPrefill = p.PriorPrefillTokensPerSecond
	}
	if p.PriorITL != nil {
		c.PriorITL = p.PriorITL.Duration
	}
	if p.Alpha != 0 {
		c.Alpha = p.Alpha
	}
	if p.AdapterLoad != nil {
		c.AdapterLoad = p.AdapterLoad.Duration
	}
	return c, c.Validate()
}

// Validate returns an error naming the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Overhead < 0:
		return fmt.Errorf("overhead must be >= 0, got %s", c.Overhead)
	case c.PriorPrefill <= 0:
		return fmt.Errorf("priorPrefillTokensPerSecond must be > 0, got %g", c.PriorPrefill)
	case c.PriorITL <= 0:
		return fmt.Errorf("priorITL must be > 0, got %s", c.PriorITL)
	case c.Alpha <= 0 || c.Alpha > 1:
		return fmt.Errorf("alpha must be in (0,1], got %g", c.Alpha)
	case c.AdapterLoad < 0:
		return fmt.Errorf("adapterLoad must be >= 0, got %s", c.AdapterLoad)
	}
	return nil
}
