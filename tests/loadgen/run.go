// Package loadgen sends a workload's request sequence to one or more targets and measures every
// request: time to first token, inter-token latencies, end-to-end latency, output tokens, cached
// prompt tokens, errors, and where each request was served.
//
// Open-loop workloads follow their arrival schedule whatever the responses do: each request runs in
// its own goroutine, and a per-target in-flight cap (counted as errors when hit) keeps a dead target
// from exhausting the machine. With several targets, each scheduled arrival is sent to every target
// at the same instant, the order of the sends rotating from one arrival to the next, so machine
// noise hits all targets alike.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// Config is one run's settings.
type Config struct {
	// Workload is what to send (required).
	Workload *workload.Workload
	// Seed generates the request sequence; 0 means the workload's own seed.
	Seed uint64
	// MaxInFlight caps the requests in flight per target; arrivals past it are recorded as
	// ErrOverload without being sent (default 4096).
	MaxInFlight int
	// RequestTimeout bounds each request (default 10m).
	RequestTimeout time.Duration
	// Client sends the requests (default NewHTTPClient()).
	Client *http.Client
	// Progress, when set, receives a one-line summary every ProgressInterval.
	Progress io.Writer
	// ProgressInterval is the time between progress lines (default 5s).
	ProgressInterval time.Duration
	// Logger receives debug detail (default: discard).
	Logger *slog.Logger
}

// DefaultConfig returns a Config with every default set and no workload.
func DefaultConfig() Config {
	return Config{
		MaxInFlight:      4096,
		RequestTimeout:   10 * time.Minute,
		ProgressInterval: 5 * time.Second,
	}
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.Workload == nil:
		return errors.New("loadgen: workload: required")
	case c.MaxInFlight <= 0:
		return fmt.Errorf("loadgen: max in flight: must be > 0, got %d", c.MaxInFlight)
	case c.RequestTimeout <= 0:
		return fmt.Errorf("loadgen: request timeout: must be > 0, got %s", c.RequestTimeout)
	case c.Progress != nil && c.ProgressInterval <= 0:
		return fmt.Errorf("loadgen: progress interval: must be > 0, got %s", c.ProgressInterval)
	}
	return c.Workload.Validate()
}

// withDefaults fills the optional fields a caller left zero.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MaxInFlight == 0 {
		c.MaxInFlight = d.MaxInFlight
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = d.RequestTimeout
	}
	if c.ProgressInterval == 0 {
		c.ProgressInterval = d.ProgressInterval
	}
	if c.Client == nil {
		c.Client = NewHTTPClient()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Seed == 0 && c.Workload != nil {
		c.Seed = c.Workload.Seed
	}
	return c
}

// Run sends the workload to every target and returns every sample. When ctx is canceled it stops
// sending, cancels what is in flight and returns the partial result with ctx's error.
func Run(ctx context.Context, cfg Config, targets []Target) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := validateTargets(cfg.Workload, targets); err != nil {
		return nil, err
	}
	r, err := newRunner(cfg, targets)
	if err != nil {
		return nil, err
	}
	r.start = time.Now()
	stopProgress := r.startProgress()
	if cfg.Workload.IsClosedLoop() {
		r.closedLoop(ctx)
	} else {
		r.openLoop(ctx)
	}
	r.wg.Wait()
	stopProgress()
	return r.result(), ctx.Err()
}

func validateTargets(w *workload.Workload, targets []Target) error {
	if len(targets) == 0 {
		return errors.New("loadgen: targets: at least one required")
	}
	seen := map[string]bool{}
	for i := range targets {
		if err := targets[i].validate(w); err != nil {
			return fmt.Errorf("loadgen: %w", err)
		}
		if seen[targets[i].Name] {
			return fmt.Errorf("loadgen: target name %q used twice", targets[i].Name)
		}
		seen[targets[i].Name] = true
	}
	return nil
}

// runner is one run's state.
type runner struct {
	cfg     Config
	targets []Target
	reqs    []workload.Request // the open-loop schedule
	state   []*targetState
	start   time.Time
	end     atomic.Int64 // nanoseconds from start to the last response
	wg      sync.WaitGroup
	sent    atomic.Int64
	// sloHeaders are the request headers of each of the workload's SLO classes.
	sloHeaders []http.Header
}

// targetState is what one target accumulates.
type targetState struct {
	mu       sync.Mutex
	samples  []Sample
	inFlight atomic.Int64
	done     atomic.Int64
	errors   atomic.Int64
}

// newRunner prepares a run; for open loops it generates the whole schedule up front.
func newRunner(cfg Config, targets []Target) (*runner, error) {
	r := &runner{cfg: cfg, targets: targets, sloHeaders: SLOHeaders(cfg.Workload.SLOHeaders)}
	if !cfg.Workload.IsClosedLoop() {
		reqs, err := workload.Generate(cfg.Workload, cfg.Seed)
		if err != nil {
			return nil, fmt.Errorf("loadgen: %w", err)
		}
		r.reqs = reqs
	}
	for range targets {
		r.state = append(r.state, &targetState{samples: make([]Sample, 0, len(r.reqs))})
	}
	return r, nil
}
