// Package flowcontrol holds requests the scheduler cannot place because every candidate endpoint
// is saturated. Queued requests wait in priority bands (higher first) with round-robin fairness
// across tenants inside a band, bounded by a queue limit and a time to live; they are retried when
// capacity may have freed (a request finished, metrics refreshed, or a short tick). Requests past
// the limits are answered 429 with Retry-After and x-switchyard-overflow: 1 so Tier 2 can try
// another cluster. Sheddable requests (priority < 0) are the first rejected and the first evicted.
package flowcontrol

import (
	"fmt"
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
	}
	return nil
}

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
// mapping; an unparsable priority is an error.
func (c Config) Classify(get func(name string) string) (priority int, tenant string, err error) {
	priority = c.DefaultPriority
	if obj := get(contract.HeaderObjective); obj != "" {
		if p, ok := c.ObjectivePriorities[obj]; ok {
			priority = p
		}
	}
	if v := strings.TrimSpace(get(contract.HeaderPriority)); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil {
			return 0, "", fmt.Errorf("invalid %s header %q: want an integer", contract.HeaderPriority, v)
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
	return contract.ParseHandBack(get(contract.HeaderHandBack))
}
