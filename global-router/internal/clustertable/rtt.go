package clustertable

import (
	"math"
	"time"
)

// Measured round trips. Gossip's network coordinates (or a configured figure) give every
// cluster a first estimate of its round trip, the prior; each request the router forwards
// measures the real one on the data path (its time to response headers less the gateway's own
// time, forward.Outcome.RTT). The cluster's RTT is a time-weighted moving average of those
// samples, so a path that slows down (a congested or degraded inter-region link, which the
// coordinates, measured on gossip's own packets, need not see) is steered around within about
// RTTConfig.Window of its first slow answers.
//
// Once the samples stop (traffic went elsewhere), the measurement fades back into the prior
// over RTTConfig.Fade, instead of being dropped at once: traffic returns to a cluster that was
// slow gradually, as its estimate nears the others' again, and its next answers measure it anew.

// RTTConfig tunes measured round trips.
type RTTConfig struct {
	// Window is the averaging window: a sample's weight is 1 - exp(-gap/Window), where gap is
	// the time since the previous sample, so the average covers about the last Window of
	// requests however many there were (a lone sample after a quiet spell counts almost fully).
	// Default 1 s.
	Window time.Duration
	// Fade is how long the average takes, once samples stop, to fade back into the prior: its
	// weight against the prior is exp(-age/Fade), age counted from the last sample. Default 10 s.
	Fade time.Duration
	// Off turns measurement off: the prior alone is used.
	Off bool
}

// DefaultRTTConfig returns the defaults documented on RTTConfig.
func DefaultRTTConfig() RTTConfig { return RTTConfig{Window: time.Second, Fade: 10 * time.Second} }

// rttMeter is one cluster's measured round trip.
type rttMeter struct {
	avg  float64 // nanoseconds
	last time.Time
}

// add folds in a sample taken at now.
func (m *rttMeter) add(sample time.Duration, now time.Time, cfg RTTConfig) {
	if m.last.IsZero() {
		m.avg, m.last = float64(sample), now
		return
	}
	gap := max(now.Sub(m.last), 0)
	w := 1 - math.Exp(-float64(gap)/float64(cfg.Window))
	// Samples at the same instant (a burst answered together) still move the average a little.
	w = max(w, minRTTWeight)
	m.avg += w * (float64(sample) - m.avg)
	m.last = now
}

// minRTTWeight is the least weight of one sample.
const minRTTWeight = 0.01

// estimate blends the measurement with prior at now.
func (m *rttMeter) estimate(prior time.Duration, now time.Time, cfg RTTConfig) time.Duration {
	if m == nil || m.last.IsZero() {
		return prior
	}
	age := max(now.Sub(m.last), 0)
	keep := math.Exp(-float64(age) / float64(cfg.Fade))
	return time.Duration(keep*m.avg + (1-keep)*float64(prior))
}

// withDefaults fills zero fields.
func (c RTTConfig) withDefaults() RTTConfig {
	d := DefaultRTTConfig()
	if c.Window <= 0 {
		c.Window = d.Window
	}
	if c.Fade <= 0 {
		c.Fade = d.Fade
	}
	return c
}
