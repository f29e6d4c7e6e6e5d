package scrape

import (
	"errors"
	"fmt"
	"time"
)

// Config controls scraping. Flags bind to the same struct.
type Config struct {
	// Interval is the time between two scrapes of one pod when the fleet is small. Default 50 ms.
	Interval time.Duration
	// PerEndpoint grows the interval with the fleet: the interval used is
	// clamp(max(Interval, n×PerEndpoint), MaxInterval) for n endpoints, so the total scrape rate
	// stays bounded (default 200 µs: 50 ms up to 250 pods, 200 ms at 1,000 pods). 0 disables growth.
	PerEndpoint time.Duration
	// MaxInterval caps the grown interval; keep it well below the scheduler's staleness limit
	// (2 s by default). Default 1 s.
	MaxInterval time.Duration
	// Jitter randomises each wait by ±Jitter×interval so pods are not scraped in lockstep. Default 0.1.
	Jitter float64
	// Timeout bounds one scrape (connect, headers and body). Each pod's loop is sequential, so a slow
	// pod delays its own next scrape instead of piling requests onto it; the timeout is therefore
	// allowed to exceed the interval, which keeps one slow answer on a busy pod from marking it
	// failed. It must stay below the staleness limit. Default 500 ms.
	Timeout time.Duration
	// ModelsInterval is how often each pod's /v1/models is re-read (it is read at first contact,
	// and retried every RetryModels until it succeeds). Default 5 s.
	ModelsInterval time.Duration
	// RetryModels is the wait before retrying a failed /v1/models read. Default 1 s.
	RetryModels time.Duration
	// MaxBodyBytes bounds a /metrics or /v1/models body. Default 16 MiB.
	MaxBodyBytes int64
	// MetricsPath and ModelsPath are the paths scraped on each pod. Defaults "/metrics", "/v1/models".
	MetricsPath string
	ModelsPath  string
	// MetricsPort, when not 0, is the port of each pod's /metrics instead of the port it serves
	// on (GIE's --model-server-metrics-port); /v1/models is always read on the serving port.
	// Default 0.
	MetricsPort int
	// MetricsScheme is "http" or "https", for /metrics only (GIE's
	// --model-server-metrics-scheme); empty is "http". Default "http".
	MetricsScheme string
	// MetricsInsecureSkipVerify does not verify the pods' certificates with MetricsScheme
	// "https" (GIE's --model-server-metrics-https-insecure-skip-verify). Default false.
	MetricsInsecureSkipVerify bool
	// Families replaces the metric families some signals are read from, on every pod (GIE's
	// metric flags). Default: each engine's own names.
	Families Families
}

// DefaultConfig returns the defaults documented on each field.
func DefaultConfig() Config {
	return Config{
		Interval:       50 * time.Millisecond,
		PerEndpoint:    200 * time.Microsecond,
		MaxInterval:    time.Second,
		Jitter:         0.1,
		Timeout:        500 * time.Millisecond,
		ModelsInterval: 5 * time.Second,
		RetryModels:    time.Second,
		MaxBodyBytes:   16 << 20,
		MetricsPath:    "/metrics",
		ModelsPath:     "/v1/models",
		MetricsScheme:  "http",
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Interval <= 0:
		return errors.New("scrape: Interval must be positive")
	case c.PerEndpoint < 0:
		return errors.New("scrape: PerEndpoint must not be negative")
	case c.MaxInterval < c.Interval:
		return fmt.Errorf("scrape: MaxInterval %v is below Interval %v", c.MaxInterval, c.Interval)
	case c.Jitter < 0 || c.Jitter >= 1:
		return errors.New("scrape: Jitter must be in [0,1)")
	case c.Timeout <= 0:
		return errors.New("scrape: Timeout must be positive")
	case c.ModelsInterval <= 0 || c.RetryModels <= 0:
		return errors.New("scrape: ModelsInterval and RetryModels must be positive")
	case c.MaxBodyBytes <= 0:
		return errors.New("scrape: MaxBodyBytes must be positive")
	case c.MetricsPath == "" || c.MetricsPath[0] != '/' || c.ModelsPath == "" || c.ModelsPath[0] != '/':
		return errors.New("scrape: MetricsPath and ModelsPath must start with /")
	case c.MetricsPort < 0 || c.MetricsPort > 65535:
		return fmt.Errorf("scrape: MetricsPort %d is not a port (0 for the serving port)", c.MetricsPort)
	case c.MetricsScheme != "" && c.MetricsScheme != "http" && c.MetricsScheme != "https":
		return fmt.Errorf("scrape: MetricsScheme %q: want http or https", c.MetricsScheme)
	}
	return c.validateFamilies()
}

// validateFamilies checks the replaced families' names.
func (c Config) validateFamilies() error {
	for _, o := range c.Families.overrides() {
		if o.spec == nil || o.spec.Name == "" {
			continue
		}
		if err := checkMetricName(o.spec.Name); err != nil {
			return fmt.Errorf("scrape: Families: %w", err)
		}
	}
	return nil
}

// IntervalFor returns the scrape interval used for n endpoints.
func (c Config) IntervalFor(n int) time.Duration {
	d := max(c.Interval, time.Duration(n)*c.PerEndpoint)
	return min(d, c.MaxInterval)
}
