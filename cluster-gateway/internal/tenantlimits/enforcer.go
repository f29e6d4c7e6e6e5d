package tenantlimits

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract/ratelimit"
)

// Which limit refused a request: the limit label of the refusal metric, as the router names it.
const (
	LimitTokens      = ratelimit.LimitTokens
	LimitRequests    = ratelimit.LimitRequests
	LimitConcurrency = ratelimit.LimitConcurrency
)

// Refusal says why a request was refused and when to try again.
type Refusal struct {
	// Tenant is the tenant named in the answer (the request's, even when charged to Others).
	Tenant string
	// Limit is the limit that refused it (LimitTokens, LimitRequests, LimitConcurrency).
	Limit string
	// RetryAfter is when the request would fit, at the rate the limit refills.
	RetryAfter time.Duration
}

// Lease is an admitted request's hold on its tenant's limits: Finish it with the tokens used
// (ratelimit.UsageUnknown when not seen), or Refund it, exactly once.
type Lease = ratelimit.Lease

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
	cfg     Config
	log     *slog.Logger
	metrics *Metrics
	table   atomic.Pointer[Table]
	last    []byte // the content of the file in force
	limiter *ratelimit.Limiter
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
	lc := ratelimit.DefaultConfig()
	lc.Now = cfg.Now
	e := &Enforcer{cfg: cfg, log: log, limiter: ratelimit.New(lc)}
	e.metrics = newMetrics(reg)
	if _, _, err := e.reload(); err != nil {
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
		if changed, released, err := e.reload(); err != nil {
			e.metrics.reloadErrors.Inc()
			e.log.Warn("tenant limits file rejected, keeping the limits in force", "path", e.cfg.Path, "err", err)
		} else if changed {
			e.log.Info("tenant limits file reloaded", "path", e.cfg.Path, "tenants", e.table.Load().Len(),
				"released", released)
		}
	}
}

// reload reads the file and applies it when its content changed; released is the number of
// tenants whose counters it released (no longer listed, or listed with other limits).
func (e *Enforcer) reload() (changed bool, released int, err error) {
	raw, err := os.ReadFile(e.cfg.Path)
	if err != nil {
		return false, 0, fmt.Errorf("tenantlimits: read %s: %w", e.cfg.Path, err)
	}
	if e.last != nil && bytes.Equal(raw, e.last) {
		return false, 0, nil
	}
	t, err := Parse(raw)
	if err != nil {
		return false, 0, fmt.Errorf("%s: %w", e.cfg.Path, err)
	}
	e.last = raw
	e.table.Store(t)
	// A tenant no longer listed, or listed with other limits, starts afresh if it comes back.
	released = e.limiter.Sync(func(key string) (ratelimit.Limits, bool) {
		lim, ok := t.tenants[key]
		return ratelimit.Limits(lim), ok
	})
	e.metrics.tenants.Set(float64(t.Len()))
	return true, released, nil
}

// Tenants returns the number of tenants (file entries, Others included) whose counters the
// enforcer holds: those that sent requests under limits still in force.
func (e *Enforcer) Tenants() int { return e.limiter.Tenants() }

// Admit charges a request of tenant ("" for none) reserving reserve tokens (its prompt
// estimate plus its output bound) to the tenant's limits, or to the Others entry's when the
// file does not list it. It returns nil and nil for a request nothing limits. A returned lease
// must be finished (Finish or Refund) exactly once.
func (e *Enforcer) Admit(tenant string, reserve int64) (*Lease, *Refusal) {
	lim, key, ok := e.table.Load().Lookup(tenant)
	if !ok || lim == (Limits{}) {
		return nil, nil
	}
	lease, ref := e.limiter.Admit(key, ratelimit.Limits(lim), reserve)
	if ref != nil {
		e.metrics.refused(key, ref.Limit)
		return nil, &Refusal{Tenant: tenant, Limit: ref.Limit, RetryAfter: ref.RetryAfter}
	}
	return lease, nil
}

// Used returns the tokens the counters of key (a tenant's name, or Others) hold now over the
// sliding minute (reservations in flight included) and its requests in flight.
func (e *Enforcer) Used(key string) (tokens, inFlight int64) { return e.limiter.Used(key) }
