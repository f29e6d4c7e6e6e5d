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
//
// The return is bounded. Once the measurement's weight has fallen below RTTConfig.ProbeBelow,
// a cluster measured more than RTTConfig.ProbeMargin slower than its prior is unverified: its
// estimate is mostly the prior, which was wrong before, and the path may well still be slow (or
// cut). It is offered to one request at a time, a probe, as a half-open cluster is after an
// ejection (see slowstart.go), until an answer measures it again; then it gets its full share,
// or, still slow, is steered around again. Without this, every request decided while its
// estimate looked best would go there before the first of them answered.

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
	// ProbeBelow is the measurement's weight, exp(-age/Fade), below which a cluster whose
	// measurement exceeded its prior by more than ProbeMargin is unverified and offered to one
	// probe request at a time until an answer measures it again. Default 0.5: the estimate is
	// then mostly prior, about 6.9 s (Fade × ln 2) after the last answer at the default Fade.
	ProbeBelow float64
	// ProbeMargin is how much slower than the prior a measurement must be for its fading to need
	// a probe; a cluster measured about as fast as its prior (or faster) just fades. Default
	// 20 ms.
	ProbeMargin time.Duration
	// Off turns measurement off: the prior alone is used.
	Off bool
}

// DefaultRTTConfig returns the defaults documented on RTTConfig.
func DefaultRTTConfig() RTTConfig {
	return RTTConfig{Window: time.Second, Fade: 10 * time.Second, ProbeBelow: 0.5, ProbeMargin: 20 * time.Millisecond}
}

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

// estimate blends the measurement with prior at now, and reports whether the cluster is
// unverified: measured slow, and faded mostly back into the prior since.
func (m *rttMeter) estimate(prior time.Duration, now time.Time, cfg RTTConfig) (rtt time.Duration, unverified bool) {
	if m.last.IsZero() {
		return prior, false
	}
	age := max(now.Sub(m.last), 0)
	keep := math.Exp(-float64(age) / float64(cfg.Fade))
	unverified = keep < cfg.ProbeBelow && m.avg > float64(prior+cfg.ProbeMargin)
	return time.Duration(keep*m.avg + (1-keep)*float64(prior)), unverified
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
	if c.ProbeBelow <= 0 {
		c.ProbeBelow = d.ProbeBelow
	}
	if c.ProbeMargin <= 0 {
		c.ProbeMargin = d.ProbeMargin
	}
	return c
}
