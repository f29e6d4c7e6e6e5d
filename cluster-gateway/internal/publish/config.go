package publish

import (
	"errors"
	"fmt"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// ReferencePromptTokens is the prompt length of the reference request whose predicted time to
// first token every summary carries (1,000 prompt tokens, nothing cached). Routers rely on it.
const ReferencePromptTokens = 1000

// Config tunes a Publisher. Build it with DefaultConfig and change what differs.
type Config struct {
	// CheckInterval is how often the gateway's view is examined for a significant change.
	// Default 50 ms (the scrape interval), so a large change leaves within one check.
	CheckInterval time.Duration
	// MinInterval is the shortest gap between two publishes. Default 250 ms.
	MinInterval time.Duration
	// Heartbeat is the longest gap between two publishes: with no significant change the
	// summary is republished this often so routers keep it fresh. Default 1 s.
	Heartbeat time.Duration

	// FreeKVChange: a model's free KV tokens moving by more than this fraction of its total KV
	// tokens is significant. Default 0.05.
	FreeKVChange float64
	// QueueChange: a model's or adapter's queue depth moving by more than this many requests is
	// significant. Default 2.
	QueueChange int
	// TTFTChange: a model's predicted TTFT moving by more than this fraction of the last
	// published value is significant. Default 0.25.
	TTFTChange float64

	// Saturation is the per-pod saturation definition, the same as the saturation filter's
	// (framework.Saturation): queue >= 5 or KV use >= 0.8 (times 1+headroom), stale or ejected.
	// Its Staleness (default 2 s) also decides readiness: a pod whose metrics are older, or whose
	// last scrape failed, is not ready.
	Saturation framework.Saturation

	// Overhead is the fixed per-request cost added by the fallback TTFT prediction (used when
	// no TTFTPredictor is set). Default 5 ms, as the predicted-ttft-scorer.
	Overhead time.Duration
	// PriorPrefillTokensPerSecond is a pod's prefill speed when no SpeedSource knows it.
	// Default 10,000, as the predicted-ttft-scorer's prior.
	PriorPrefillTokensPerSecond float64
	// PriorDecodeTokensPerSecond is a pod's decode speed (1/ITL) when no SpeedSource knows it.
	// Default 50 (a 20 ms ITL, as the predicted-ttft-scorer's prior).
	PriorDecodeTokensPerSecond float64

	// MaxHotPrefixes bounds the prefix-block hashes per model put in the summary's sketch.
	// Default 1024 (about 16k prompt tokens, about 1 KiB of filter); 0 publishes no sketch.
	MaxHotPrefixes int
	// SketchFalsePositiveRate sizes each model's Bloom filter for the hashes it holds.
	// Default 0.02 (about 8 bits per hash).
	SketchFalsePositiveRate float64
	// SketchSeed is mixed into the sketch's hashes; set it per cluster (e.g. prefix.Seed of the
	// cluster name) so unrelated clusters' filters do not collide alike. Default 0.
	SketchSeed uint64
}

// DefaultConfig returns the defaults documented on each Config field.
func DefaultConfig() Config {
	return Config{
		CheckInterval:               50 * time.Millisecond,  // as often as pods are scraped
		MinInterval:                 250 * time.Millisecond, // at most 4 summaries a second
		Heartbeat:                   time.Second,            // a receiver that misses one is still inside the 3 s TTL
		FreeKVChange:                0.05,                   // 5% of the model's KV capacity
		QueueChange:                 2,                      // more than 2 requests
		TTFTChange:                  0.25,                   // a quarter of the last prediction
		Saturation:                  framework.DefaultSaturation(),
		Overhead:                    5 * time.Millisecond,
		PriorPrefillTokensPerSecond: 10000,
		PriorDecodeTokensPerSecond:  50,
		MaxHotPrefixes:              1024,
		SketchFalsePositiveRate:     0.02,
	}
}

// Validate returns an error naming every field that is out of range.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf("publish: "+format, a...)) }
	if c.CheckInterval <= 0 || c.MinInterval <= 0 || c.Heartbeat <= 0 {
		add("CheckInterval %v, MinInterval %v and Heartbeat %v must be positive", c.CheckInterval, c.MinInterval, c.Heartbeat)
	}
	if c.Heartbeat < c.MinInterval {
		add("Heartbeat %v is below MinInterval %v", c.Heartbeat, c.MinInterval)
	}
	if c.FreeKVChange < 0 || c.QueueChange < 0 || c.TTFTChange < 0 {
		add("FreeKVChange %g, QueueChange %d and TTFTChange %g must be >= 0", c.FreeKVChange, c.QueueChange, c.TTFTChange)
	}
	if err := c.Saturation.Validate(); err != nil {
		add("Saturation: %w", err)
	}
	if c.Overhead < 0 {
		add("Overhead %v must be >= 0", c.Overhead)
	}
	if c.PriorPrefillTokensPerSecond <= 0 || c.PriorDecodeTokensPerSecond <= 0 {
		add("PriorPrefillTokensPerSecond %g and PriorDecodeTokensPerSecond %g must be positive",
			c.PriorPrefillTokensPerSecond, c.PriorDecodeTokensPerSecond)
	}
	if c.MaxHotPrefixes < 0 {
		add("MaxHotPrefixes %d must be >= 0", c.MaxHotPrefixes)
	}
	if c.MaxHotPrefixes > 0 && !(c.SketchFalsePositiveRate > 0 && c.SketchFalsePositiveRate < 1) {
		add("SketchFalsePositiveRate %g must be in (0,1)", c.SketchFalsePositiveRate)
	}
	return errors.Join(errs...)
}
