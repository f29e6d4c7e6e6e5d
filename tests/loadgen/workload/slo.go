package workload

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// maxSLOHeader bounds a class's objectives: the gateway refuses an x-slo-*-ms above an hour.
const maxSLOHeader = time.Hour

// SLOClass is a share of the requests that carry latency objectives in request headers:
// x-slo-ttft-ms and x-slo-tpot-ms (the gateway's slo-filter reads them),
// x-gateway-inference-objective and x-switchyard-priority (a priority below 0 is sheddable).
// Goodput judges a request of a class against the class's bounds, and against the workload's
// SLO for a bound the class does not set.
type SLOClass struct {
	// Share is the fraction of requests in (0,1]; the classes' shares sum to at most 1 and the
	// rest carry no header.
	Share float64 `yaml:"share"`
	// TTFT is sent as x-slo-ttft-ms (0: not sent).
	TTFT time.Duration `yaml:"ttft"`
	// TPOT is sent as x-slo-tpot-ms (0: not sent).
	TPOT time.Duration `yaml:"tpot"`
	// Objective is sent as x-gateway-inference-objective ("": not sent).
	Objective string `yaml:"objective"`
	// Priority, when set, is sent as x-switchyard-priority.
	Priority *int `yaml:"priority"`
}

// String describes the class in a spec's syntax (ParseSLOClasses), for reports.
func (c SLOClass) String() string {
	parts := []string{"share=" + strconv.FormatFloat(c.Share, 'g', 4, 64)}
	if c.TTFT > 0 {
		parts = append(parts, "ttft="+c.TTFT.String())
	}
	if c.TPOT > 0 {
		parts = append(parts, "tpot="+c.TPOT.String())
	}
	if c.Objective != "" {
		parts = append(parts, "objective="+c.Objective)
	}
	if c.Priority != nil {
		parts = append(parts, "priority="+strconv.Itoa(*c.Priority))
	}
	return strings.Join(parts, ",")
}

// SLO returns the objective goodput judges the class's requests by: its own bounds, and the
// workload's (base, may be nil) where it sets none. Nil when neither sets a bound.
func (c SLOClass) SLO(base *SLO) *SLO {
	s := SLO{TTFT: c.TTFT, TPOT: c.TPOT}
	if base != nil {
		s.TTFT = cmpOr(s.TTFT, base.TTFT)
		s.TPOT = cmpOr(s.TPOT, base.TPOT)
	}
	if s.TTFT == 0 && s.TPOT == 0 {
		return nil
	}
	return &s
}

func cmpOr(a, b time.Duration) time.Duration {
	if a != 0 {
		return a
	}
	return b
}

// SLOClassOf returns the index in SLOHeaders of request index's class under seed, or -1 for a
// request that carries no objective. The draw is a hash of the seed and the index, so every
// target gets the same classes and adding classes changes no other part of the sequence.
func (w *Workload) SLOClassOf(seed uint64, index int) int {
	if len(w.SLOHeaders) == 0 {
		return -1
	}
	u := float64(splitmix64(seed^0x510c1a55^uint64(index)*0x9e3779b97f4a7c15)>>11) / (1 << 53)
	for i, c := range w.SLOHeaders {
		if u -= c.Share; u < 0 {
			return i
		}
	}
	return -1
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// validateSLOHeaders checks the classes' shares, bounds and names.
func (w *Workload) validateSLOHeaders() error {
	total := 0.0
	for i, c := range w.SLOHeaders {
		if err := c.validate(); err != nil {
			return fmt.Errorf("slo_headers[%d].%w", i, err)
		}
		total += c.Share
	}
	if total > 1+1e-9 {
		return fmt.Errorf("slo_headers: shares sum to %g, above 1", total)
	}
	return nil
}

func (c SLOClass) validate() error {
	switch {
	case !(c.Share > 0 && c.Share <= 1):
		return fmt.Errorf("share: must be in (0,1], got %v", c.Share)
	case c.TTFT < 0 || c.TTFT > maxSLOHeader:
		return fmt.Errorf("ttft: must be in [0, 1h], got %s", c.TTFT)
	case c.TPOT < 0 || c.TPOT > maxSLOHeader:
		return fmt.Errorf("tpot: must be in [0, 1h], got %s", c.TPOT)
	case c.TTFT > 0 && c.TTFT < time.Microsecond, c.TPOT > 0 && c.TPOT < time.Microsecond:
		return errors.New("ttft, tpot: must be at least 1µs (the headers carry milliseconds)")
	case c.Objective != "" && !validObjective(c.Objective):
		return fmt.Errorf("objective: %q must be 1-63 letters, digits, '.', '_' or '-'", c.Objective)
	case c.TTFT == 0 && c.TPOT == 0 && c.Objective == "" && c.Priority == nil:
		return errors.New("ttft, tpot, objective, priority: set at least one")
	}
	return nil
}

func validObjective(s string) bool {
	if len(s) > 63 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-", r)) {
			return false
		}
	}
	return s != ""
}

// ParseSLOClasses reads classes written as "KEY=VALUE,..." separated by ';', keys share
// (default: an equal part of what the classes with a share leave), ttft and tpot (durations),
// objective and priority, e.g. "ttft=1s,tpot=25ms,share=0.75;ttft=1s,tpot=25ms,priority=-1".
func ParseSLOClasses(spec string) ([]SLOClass, error) {
	var out []SLOClass
	var unshared []int
	left := 1.0
	for i, part := range strings.Split(spec, ";") {
		c, shared, err := parseSLOClass(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("slo headers: class %d: %w", i+1, err)
		}
		if shared {
			left -= c.Share
		} else {
			unshared = append(unshared, i)
		}
		out = append(out, c)
	}
	for _, i := range unshared {
		out[i].Share = math.Max(left, 0) / float64(len(unshared))
	}
	w := Workload{SLOHeaders: out}
	if err := w.validateSLOHeaders(); err != nil {
		return nil, err
	}
	return out, nil
}

// parseSLOClass reads one class and whether it named its share.
func parseSLOClass(s string) (SLOClass, bool, error) {
	var c SLOClass
	shared := false
	for kv := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return c, false, fmt.Errorf("%q is not KEY=VALUE", kv)
		}
		var err error
		switch k {
		case "share":
			c.Share, err = strconv.ParseFloat(v, 64)
			shared = true
		case "ttft":
			c.TTFT, err = time.ParseDuration(v)
		case "tpot":
			c.TPOT, err = time.ParseDuration(v)
		case "objective":
			c.Objective = v
		case "priority":
			var p int
			p, err = strconv.Atoi(v)
			c.Priority = &p
		default:
			return c, false, fmt.Errorf("unknown key %q (share, ttft, tpot, objective, priority)", k)
		}
		if err != nil {
			return c, false, fmt.Errorf("%s: %w", k, err)
		}
	}
	return c, shared, nil
}
