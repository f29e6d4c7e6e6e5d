package tenantlimits

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config configures an Enforcer.
type Config struct {
	// Path is the limits file (--tenant-limits-file).
	Path string
	// PollInterval is how often the file is re-read and compared with the last content (reading
	// follows Kubernetes ConfigMap symlink swaps, as the endpoints file's reload does). Default 1 s.
	PollInterval time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// DefaultConfig returns the defaults; Path must still be set.
func DefaultConfig() Config { return Config{PollInterval: time.Second} }

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Path == "":
		return errors.New("tenantlimits: Config.Path is empty")
	case c.PollInterval <= 0:
		return errors.New("tenantlimits: Config.PollInterval must be positive")
	}
	return nil
}

// Enforcer charges requests to their tenants' limits from a watched file. It is safe for
// concurrent use.
type Enforcer struct {
	cfg      Config
	log      *slog.Logger
	metrics  *Metrics
	table    atomic.Pointer[Table]
	last     []byte // the content of the file in force
	mu       sync.Mutex
	counters map[string]*counters
}

// New loads the file and returns an enforcer of its limits; a file that cannot be read or does
// not validate is an error (a gateway must not start unlimited on a broken file). log and reg
// may be nil.
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Enforcer, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Enforcer{cfg: cfg, log: log, counters: map[string]*counters{}}
	e.metrics = newMetrics(reg)
	if _, err := e.reload(); err != nil {
		return nil, err
	}
	return e, nil
}

// Run re-reads the file every PollInterval until ctx ends and applies a changed one. A file that
// cannot be read or does not validate keeps the limits in force; the error is logged and
// counted.
func (e *Enforcer) Run(ctx context.Context) error {
	t := time.NewTicker(e.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if changed, err := e.reload(); err != nil {
			e.metrics.reloadErrors.Inc()
			e.log.Warn("tenant limits file rejected, keeping the limits in force", "path", e.cfg.Path, "err", err)
		} else if changed {
			e.log.Info("tenant limits file reloaded", "path", e.cfg.Path, "tenants", e.table.Load().Len())
		}
	}
}

// reload reads the file and applies it when its content changed.
func (e *Enforcer) reload() (changed bool, err error) {
	raw, err := os.ReadFile(e.cfg.Path)
	if err != nil {
		return false, fmt.Errorf("tenantlimits: read %s: %w", e.cfg.Path, err)
	}
	if e.last != nil && bytes.Equal(raw, e.last) {
		return false, nil
	}
	t, err := Parse(raw)
	if err != nil {
		return false, fmt.Errorf("%s: %w", e.cfg.Path, err)
	}
	e.last = raw
	e.table.Store(t)
	e.mu.Lock()
	for name := range e.counters { // a tenant no longer listed starts afresh if listed again
		if !t.lists(name) {
			delete(e.counters, name)
		}
	}
	e.mu.Unlock()
	e.metrics.tenants.Set(float64(t.Len()))
	return true, nil
}

// lists reports whether the table has an entry of its own for name.
func (t *Table) lists(name string) bool {
	_, ok := t.tenants[name]
	return ok
}

func (e *Enforcer) countersOf(key string) *counters {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.counters[key]
	if c == nil {
		c = &counters{bucket: -1}
		e.counters[key] = c
	}
	return c
}

// Admit charges a request of tenant ("" for none) reserving reserve tokens (its prompt
// estimate plus its output bound) to the tenant's limits, or to the Others entry's when the
// file does not list it. It returns nil and nil for a request nothing limits. A returned lease
// must be finished (Finish or Refund) exactly once.
func (e *Enforcer) Admit(tenant string, reserve int64) (*Lease, *Refusal) {
	lim, key, ok := e.table.Load().Lookup(tenant)
	if !ok || lim == (Limits{}) {
		return nil, nil
	}
	c := e.countersOf(key)
	now := e.cfg.Now()
	reserved, w, limit, wait := c.admit(lim, reserve, now)
	if limit != "" {
		e.metrics.refused(key, limit)
		return nil, &Refusal{Tenant: tenant, Limit: limit, RetryAfter: wait}
	}
	return &Lease{e: e, c: c, reserved: reserved, window: w}, nil
}

// Used returns the tokens the counters of key (a tenant's name, or Others) hold now over the
// sliding minute (reservations in flight included) and its requests in flight.
func (e *Enforcer) Used(key string) (tokens, inFlight int64) {
	e.mu.Lock()
	c := e.counters[key]
	e.mu.Unlock()
	if c == nil {
		return 0, 0
	}
	return c.used(e.cfg.Now())
}

// Lease is an admitted request's hold on its tenant's limits.
type Lease struct {
	e        *Enforcer
	c        *counters
	reserved int64 // -1: no token limit
	window   int64
	done     atomic.Bool
}

// Finish ends the request: its concurrency slot is given back and its token reservation
// replaced by used, the input plus output tokens it took, when known (used >= 0); unknown
// usage keeps the reservation charged. Finish on a nil or finished lease does nothing.
func (x *Lease) Finish(used int64) {
	if x == nil || x.done.Swap(true) {
		return
	}
	x.c.finish(x.reserved, x.window, used, x.e.cfg.Now())
}

// Refund ends a request no model server answered: it is charged nothing.
func (x *Lease) Refund() { x.Finish(0) }
