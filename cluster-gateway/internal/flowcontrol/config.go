// Package flowcontrol holds requests the scheduler cannot place because every candidate endpoint
// is saturated. Queued requests wait in priority bands (higher first) with round-robin fairness
// across tenants inside a band, bounded by a queue limit and a time to live; they are retried when
// capacity may have freed (a request finished, metrics refreshed, or a short tick). Requests past
// the limits are answered 429 with Retry-After and x-switchyard-overflow: 1 so Tier 2 can try
// another cluster. Sheddable requests (priority < 0) are the first rejected and the first evicted.
package flowcontrol

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
)

// Config configures flow control.
type Config struct {
	// Enabled turns queueing on. When off, a saturated scheduling attempt is answered 429 at once.
	// Default true; the app turns it off for baseline profiles.
	Enabled bool
	// MaxQueue is the most requests queued across all bands. Default 1024.
	MaxQueue int
	// TTL is how long a request may wait in the queue before it is answered 429. Default 10 s.
	TTL time.Duration
	// RetryInterval is the tick at which queued requests are retried even without a signal.
	// Default 50 ms (the default metrics scrape interval).
	RetryInterval time.Duration
	// RetryAfter is the Retry-After sent with 429 answers, rounded up to whole seconds. Default 1 s.
	RetryAfter time.Duration
	// DefaultPriority is the priority of requests without priority or objective headers. Default 0.
	DefaultPriority int
	// ObjectivePriorities maps x-gateway-inference-objective values to priorities. Default empty.
	ObjectivePriorities map[string]int
	// MinPriority and MaxPriority bound the priority bands: an x-switchyard-priority header
	// outside them is refused (400), and DefaultPriority and every objective's priority must lie
	// inside them. Defaults -10 and 10.
	MinPriority, MaxPriority int
}

// Default priority range (Config.MinPriority, Config.MaxPriority).
const (
	DefaultMinPriority = -10
	DefaultMaxPriority = 10
)

// HeaderError is a request header flow control cannot accept; the front doors answer it 400,
// naming the header.
type HeaderError struct {
	// Header is the header's lower-case name, Value what the request sent.
	Header, Value string
	// Want says what an acceptable value is.
	Want string
}

// Error implements error.
func (e *HeaderError) Error() string {
	return fmt.Sprintf("invalid %s header %q: want %s", e.Header, e.Value, e.Want)
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Enabled:             true,
		MaxQueue:            1024,
		TTL:                 10 * time.Second,
		RetryInterval:       50 * time.Millisecond,
		RetryAfter:          time.Second,
		ObjectivePriorities: map[string]int{},
		MinPriority:         DefaultMinPriority,
		MaxPriority:         DefaultMaxPriority,
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.MaxQueue < 0:
		return fmt.Errorf("flowcontrol: MaxQueue must not be negative, got %d", c.MaxQueue)
	case c.TTL <= 0:
		return fmt.Errorf("flowcontrol: TTL must be positive, got %v", c.TTL)
	case c.RetryInterval <= 0:
		return fmt.Errorf("flowcontrol: RetryInterval must be positive, got %v", c.RetryInterval)
	case c.RetryAfter <= 0:
		return fmt.Errorf("flowcontrol: RetryAfter must be positive, got %v", c.RetryAfter)
	case c.MinPriority > c.MaxPriority:
		return fmt.Errorf("flowcontrol: MinPriority %d is above MaxPriority %d", c.MinPriority, c.MaxPriority)
	case !c.inRange(c.DefaultPriority):
		return fmt.Errorf(
			"flowcontrol: DefaultPriority %d is outside %d..%d",
			c.DefaultPriority,
			c.MinPriority,
			c.MaxPriority,
		)
	}
	return c.ValidateObjectives(c.ObjectivePriorities)
}

// ValidateObjectives checks that every objective's priority lies within MinPriority..MaxPriority.
func (c Config) ValidateObjectives(objectives map[string]int) error {
	for _, name := range slices.Sorted(maps.Keys(objectives)) {
		if p := objectives[name]; !c.inRange(p) {
			return fmt.Errorf("flowcontrol: objective %q has priority %d, outside %d..%d", name, p, c.MinPriority, c.MaxPriority)
		}
	}
	return nil
}

func (c Config) inRange(p int) bool { return p >= c.MinPriority && p <= c.MaxPriority }

// RetryAfterSeconds is RetryAfter in whole seconds, at least 1.
func (c Config) RetryAfterSeconds() int {
	s := int((c.RetryAfter + time.Second - 1) / time.Second)
	return max(s, 1)
}

// ParseObjectivePriorities reads "objective=priority,..." (e.g. "critical=10,batch=-1").
func ParseObjectivePriorities(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, pair := range strings.Split(v, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, num, ok := strings.Cut(pair, "=")
		p, err := strconv.Atoi(strings.TrimSpace(num))
		if !ok || strings.TrimSpace(name) == "" || err != nil {
			return nil, fmt.Errorf("objective priorities: entry %q is not objective=integer", pair)
		}
		out[strings.TrimSpace(name)] = p
	}
	return out, nil
}

// Classify reads the priority and the tenant of a request from its headers (get returns a header
// value by lower-case name, "" when absent). x-switchyard-priority wins over the objective
// mapping; a priority that is not an integer within MinPriority..MaxPriority is a *HeaderError.
func (c Config) Classify(get func(name string) string) (priority int, tenant string, err error) {
	priority = c.DefaultPriority
	if obj := get(contract.HeaderObjective); obj != "" {
		if p, ok := c.ObjectivePriorities[obj]; ok {
			priority = p
		}
	}
	if v := strings.TrimSpace(get(contract.HeaderPriority)); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || !c.inRange(p) {
			return 0, "", &HeaderError{Header: contract.HeaderPriority, Value: v,
				Want: fmt.Sprintf("an integer from %d to %d", c.MinPriority, c.MaxPriority)}
		}
		priority = p
	}
	tenant = get(contract.HeaderTenant)
	if tenant == "" {
		tenant = get(contract.HeaderFairnessID)
	}
	return priority, tenant, nil
}

// HandBackAfter reads contract.HeaderHandBack (get as in Classify): 0 when absent, an error when
// it is not a whole number of milliseconds from 1 to an hour.
func HandBackAfter(get func(name string) string) (time.Duration, error) {
	v := strings.TrimSpace(get(contract.HeaderHandBack))
	d, err := contract.ParseHandBack(v)
	if err != nil {
		return 0, &HeaderError{Header: contract.HeaderHandBack, Value: v,
			Want: fmt.Sprintf("whole milliseconds from 1 to %d", contract.MaxHandBack.Milliseconds())}
	}
	return d, nil
}
