package clustertable

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
)

// EjectionConfig is the passive-health policy: a cluster whose gateway cannot be reached is
// ejected at once (gossip would take tens of seconds to notice on WAN timings); one answering
// server errors is ejected after Consecutive of them in a row. Ejection lasts Base, doubling on
// each repeat up to Max. A success resets the doubling only once the cluster has gone Probation
// without an ejection: a cluster that flaps (fails, answers for a moment, fails again) is kept out
// longer each time instead of taking a full share of the traffic whenever it is briefly up.
type EjectionConfig struct {
	// Consecutive server errors (500, 502, 504) that eject a cluster; default 3.
	Consecutive int
	// Base is the first ejection's length; default 1 s.
	Base time.Duration
	// Max caps the ejection length; default 30 s.
	Max time.Duration
	// Probation is how long after its last ejection ended a cluster must keep answering before a
	// success forgets its ejections; default 30 s. 0 forgets them at the first success.
	Probation time.Duration
	// SlowStart is how long a cluster takes to get its whole share of traffic back once its
	// ejection ends, or once a restarted gateway's summary arrives after the cluster went stale;
	// see slowstart.go. Default 5 s; 0 turns slow start off.
	SlowStart time.Duration
	// MaxEjectionPercent caps, as Envoy's max_ejection_percent, the share of the clusters with a
	// fresh summary (in every region, drained or not: passive health is per cluster, not per
	// model) that may be ejected at once: n·percent/100 rounded down, but at least one of two or
	// more; a lone cluster is never ejected below 100. An ejection past the cap is refused and
	// the cluster stays a candidate, so a failing dependency or a client provoking errors cannot
	// empty the table. Default 50; 0 turns ejection off.
	MaxEjectionPercent int
}

// DefaultEjectionConfig returns the defaults documented on EjectionConfig.
func DefaultEjectionConfig() EjectionConfig {
	return EjectionConfig{Consecutive: 3, Base: time.Second, Max: 30 * time.Second, Probation: 30 * time.Second,
		SlowStart: 5 * time.Second, MaxEjectionPercent: 50}
}

// Validate reports the first invalid field.
func (c EjectionConfig) Validate() error {
	switch {
	case c.Consecutive < 1:
		return fmt.Errorf("clustertable: Ejection.Consecutive %d must be >= 1", c.Consecutive)
	case c.Base <= 0 || c.Max < c.Base:
		return fmt.Errorf("clustertable: Ejection.Base (%v) must be > 0 and Ejection.Max (%v) >= Base", c.Base, c.Max)
	case c.Probation < 0 || c.SlowStart < 0:
		return errors.New("clustertable: Ejection.Probation and Ejection.SlowStart must be >= 0")
	case c.MaxEjectionPercent < 0 || c.MaxEjectionPercent > 100:
		return fmt.Errorf("clustertable: Ejection.MaxEjectionPercent %d must be 0..100", c.MaxEjectionPercent)
	}
	return nil
}

// MaxEjected is how many of n clusters may be ejected at once when percent of them may:
// n·percent/100 rounded down, but at least one of two or more when percent > 0 (a failed
// cluster of a pair is still avoided). A lone cluster is never ejected unless percent is 100.
// percent is clamped to 0..100.
func MaxEjected(n, percent int) int {
	percent = min(max(percent, 0), 100)
	k := n * percent / 100
	if k == 0 && n >= 2 && percent > 0 {
		k = 1
	}
	return k
}

// failure reports whether o counts against its cluster's health (it may eject it).
func failure(o forward.Outcome) bool {
	return (o.Err != nil && o.Status == 0) || (o.Status >= 500 && o.Status != http.StatusServiceUnavailable)
}

type health struct {
	failures int
	ejects   int
	until    time.Time
	// back is when the cluster last came back: its ejection ended or its summary turned fresh.
	back time.Time
	// proven is set by an answer since the last ejection; until then the cluster is half open
	// and offered to one probe request at a time, the next one not before probeUntil.
	proven     bool
	probeUntil time.Time
	// node is the gateway replica whose summary was last chosen fresh; staleSince is when the
	// cluster's summaries went stale (zero while fresh).
	node       string
	staleSince time.Time
}

func (h *health) ejected(now time.Time) bool { return now.Before(h.until) }

// observe records o at now. An ejection it makes due happens only if admit allows it (the
// table's cap); it reports whether one was refused.
func (h *health) observe(o forward.Outcome, now time.Time, cfg EjectionConfig, admit func() bool) (refused bool) {
	if h.ejected(now) && (o.Err != nil || o.Status >= 500) {
		// Requests sent before the ejection failing one after the other are one incident: they
		// must not lengthen the ejection or escalate its backoff.
		return false
	}
	h.noteAnswer(o, now)
	switch {
	case o.Err != nil && o.Status == 0:
		return !h.tryEject(now, cfg, admit)
	case o.Status >= 500 && o.Status != http.StatusServiceUnavailable:
		h.failures++
		if h.failures >= cfg.Consecutive {
			return !h.tryEject(now, cfg, admit)
		}
	case o.Status == http.StatusServiceUnavailable, o.Status == http.StatusTooManyRequests:
		// A full cluster is healthy: the routing estimate, not ejection, steers away from it.
	default:
		h.failures = 0
		if now.Sub(h.until) >= cfg.Probation {
			h.ejects = 0
		}
	}
	return false
}

// tryEject ejects the cluster at now if admit allows it, and reports whether it did. A refused
// ejection keeps the failure count, so the next failure tries again.
func (h *health) tryEject(now time.Time, cfg EjectionConfig, admit func() bool) bool {
	if !admit() {
		return false
	}
	h.eject(now, cfg)
	return true
}

func (h *health) eject(now time.Time, cfg EjectionConfig) {
	d := cfg.Base << min(h.ejects, 16)
	if d > cfg.Max || d <= 0 {
		d = cfg.Max
	}
	h.until = now.Add(d)
	h.back, h.proven = h.until, false
	h.ejects++
	h.failures = 0
}

// sendTimes remembers when recent requests were sent to a cluster (wall-clock Unix nanoseconds,
// oldest first: they are added in order, under the table's lock) and their prompt tokens, to
// count those sent since its newest summary was generated (they are not in the summary's
// figures yet) and the prefill work they brought.
type sendTimes struct {
	ring [256]int64
	// before[i] is the running total of prompt tokens sent before the send in ring[i].
	before [256]int64
	total  int64
	next   int
}

func (s *sendTimes) add(t time.Time, tokens int) {
	s.ring[s.next%len(s.ring)] = t.UnixNano()
	s.before[s.next%len(s.ring)] = s.total
	s.total += int64(max(tokens, 0))
	s.next++
}

// since counts the remembered sends after t (Unix nanoseconds), at most the ring's size, sums
// their prompt tokens and gives the time of the oldest of them (0 when none): a binary search
// back from the newest send for the first one after t.
func (s *sendTimes) since(t int64) (sends int, tokens, oldest int64) {
	n := min(s.next, len(s.ring))
	// The i-th newest send (i = 1..n) is at ring[(next-i) mod len]; sends after t are the newest k.
	k := sort.Search(n, func(i int) bool { return s.ring[(s.next-1-i)%len(s.ring)] <= t })
	if k == 0 {
		return 0, 0, 0
	}
	first := (s.next - k) % len(s.ring)
	return k, s.total - s.before[first], s.ring[first]
}
