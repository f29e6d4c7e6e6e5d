package clustertable

import (
	"net/http"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
)

// EjectionConfig is the passive-health policy: a cluster whose gateway cannot be reached is
// ejected at once (gossip would take tens of seconds to notice on WAN timings); one answering
// server errors is ejected after Consecutive of them in a row. Ejection lasts Base, doubling on
// each repeat up to Max, and a success resets it.
type EjectionConfig struct {
	// Consecutive server errors (500, 502, 504) that eject a cluster; default 3.
	Consecutive int
	// Base is the first ejection's length; default 1 s.
	Base time.Duration
	// Max caps the ejection length; default 30 s.
	Max time.Duration
}

// DefaultEjectionConfig returns the defaults documented on EjectionConfig.
func DefaultEjectionConfig() EjectionConfig {
	return EjectionConfig{Consecutive: 3, Base: time.Second, Max: 30 * time.Second}
}

type health struct {
	failures int
	ejects   int
	until    time.Time
}

func (h *health) ejected(now time.Time) bool { return now.Before(h.until) }

func (h *health) observe(o forward.Outcome, now time.Time, cfg EjectionConfig) {
	switch {
	case o.Err != nil && o.Status == 0:
		h.eject(now, cfg)
	case o.Status >= 500 && o.Status != http.StatusServiceUnavailable:
		h.failures++
		if h.failures >= cfg.Consecutive {
			h.eject(now, cfg)
		}
	case o.Status == http.StatusServiceUnavailable, o.Status == http.StatusTooManyRequests:
		// A full cluster is healthy: the routing estimate, not ejection, steers away from it.
	default:
		h.failures, h.ejects = 0, 0
	}
}

func (h *health) eject(now time.Time, cfg EjectionConfig) {
	d := cfg.Base << min(h.ejects, 16)
	if d > cfg.Max || d <= 0 {
		d = cfg.Max
	}
	h.until = now.Add(d)
	h.ejects++
	h.failures = 0
}

// sendTimes remembers when recent requests were sent to a cluster, to count those sent since its
// newest summary was generated (they are not in the summary's figures yet).
type sendTimes struct {
	ring [256]time.Time
	next int
}

func (s *sendTimes) add(t time.Time) {
	s.ring[s.next%len(s.ring)] = t
	s.next++
}

func (s *sendTimes) since(t time.Time) int {
	n := 0
	for _, x := range s.ring {
		if x.After(t) {
			n++
		}
	}
	return n
}
