package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
)

// Config is one sweep: the pool sizes to measure and how each is loaded and measured.
type Config struct {
	// Nodes are the pool sizes to measure, in gateways (clusters), smallest first.
	Nodes []int
	// Routers is how many router nodes join each pool, spread over the regions. Default 6.
	Routers int
	// Regions is how many regions the clusters and routers are spread over. Default 3.
	Regions int
	// Models is how many base models each cluster's summary lists. Default 4.
	Models int
	// Adapters is how many LoRA adapters each model lists. Default 2.
	Adapters int
	// Busy is the fraction of gateways whose figures change in every publication (every 250 ms);
	// the others publish a heartbeat every second and a change now and then. Default 0.2.
	Busy float64
	// Timings are the gossip protocol periods: LAN dissemination with failure detection patient
	// enough that a CPU-starved process does not declare live nodes dead (the probes are a few
	// bytes a second per node and do not change the figures).
	Timings gossip.Timings
	// TimingsName names Timings in the report ("lan" or "wan").
	TimingsName string
	// Warmup is how long the load runs before the window is measured. Default 10 s.
	Warmup time.Duration
	// Window is how long bytes and convergence are measured. Default 15 s.
	Window time.Duration
	// MarkEvery is how often a marked change is published whose arrival at every router is
	// timed. Default 250 ms.
	MarkEvery time.Duration
	// FormTimeout bounds how long a pool may take to form (every router sees every node alive),
	// in the modelled clock (it is dilated).
	FormTimeout time.Duration
	// PerNTimeout bounds one pool size from start to its last measurement; a size that runs out
	// is reported as where the sweep stopped. Default 8 min.
	PerNTimeout time.Duration
	// MaxDuration bounds the whole sweep: no pool size starts once it is spent. Default 40 min.
	MaxDuration time.Duration
	// Target is the extrapolation point of the fitted curves. Default 1,000.
	Target int

	// Network is "sim" (the nodes gossip over an in-memory network, simNet: no sockets) or
	// "loopback" (UDP and TCP on 127.0.0.1). Default sim.
	Network string
	// Latency and Jitter are the simulated network's one-way latency (plus up to Jitter) and
	// Loss its datagram loss. Defaults 500 µs, 500 µs, 0.
	Latency, Jitter time.Duration
	Loss            float64
	// Dilation stretches time: every gossip period, the summary TTL and full-summary interval,
	// the publication intervals, the measurement's intervals and the simulated latency are
	// multiplied by it and the broadcast budget divided by it, so that a pool needs 1/Dilation of
	// the CPU per second; the measured times are divided by it and the rates multiplied by it.
	// The gossip module's own fixed pauses (a 1 s heartbeat gap, a 500 ms delta hold-back, a
	// 250 ms staleness sweep) are not stretched. Default 1.
	Dilation float64
	// DilatePer, when above 0, dilates each pool size N by at least N/DilatePer, so that every
	// size needs about the CPU of DilatePer nodes in real time. Default 0.
	DilatePer int
}

// stretch returns d dilated.
func (c *Config) stretch(d time.Duration) time.Duration {
	return time.Duration(float64(d) * c.Dilation)
}

// DefaultConfig returns the sweep `make bench-scale` runs.
func DefaultConfig() Config {
	return Config{
		Nodes:       []int{100, 300, 1000},
		Routers:     6,
		Regions:     3,
		Models:      4,
		Adapters:    2,
		Busy:        0.2,
		Timings:     lanTimings(),
		TimingsName: "lan",
		Warmup:      10 * time.Second,
		Window:      15 * time.Second,
		MarkEvery:   250 * time.Millisecond,
		FormTimeout: 4 * time.Minute,
		PerNTimeout: 8 * time.Minute,
		MaxDuration: 40 * time.Minute,
		Target:      1000,
		Network:     "sim",
		Latency:     500 * time.Microsecond,
		Jitter:      500 * time.Microsecond,
		Dilation:    1,
	}
}

// lanTimings are the LAN profile's dissemination periods with gossiptest's patient failure
// detection.
func lanTimings() gossip.Timings {
	t := gossip.LANTimings()
	relaxed := gossiptest.RelaxedTimings()
	t.ProbeInterval, t.ProbeTimeout, t.SuspicionMult = relaxed.ProbeInterval, relaxed.ProbeTimeout, relaxed.SuspicionMult
	return t
}

// wanTimings are the WAN profile's periods (its failure detection is patient already).
func wanTimings() gossip.Timings { return gossip.WANTimings() }

// Validate names the first field out of range.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Nodes) == 0 {
		errs = append(errs, errors.New("scale: Nodes is empty"))
	}
	for _, n := range c.Nodes {
		if n < c.Regions || n > 5000 {
			errs = append(errs, fmt.Errorf("scale: Nodes %d: want %d..5000", n, c.Regions))
		}
	}
	if c.Routers < 1 || c.Regions < 1 || c.Models < 1 || c.Adapters < 0 {
		errs = append(errs, fmt.Errorf("scale: Routers %d, Regions %d, Models %d, Adapters %d: want ≥ 1 (adapters ≥ 0)",
			c.Routers, c.Regions, c.Models, c.Adapters))
	}
	if c.Busy < 0 || c.Busy > 1 {
		errs = append(errs, fmt.Errorf("scale: Busy %v: want 0..1", c.Busy))
	}
	for name, d := range map[string]time.Duration{
		"Warmup": c.Warmup, "Window": c.Window, "MarkEvery": c.MarkEvery,
		"FormTimeout": c.FormTimeout, "PerNTimeout": c.PerNTimeout, "MaxDuration": c.MaxDuration,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("scale: %s %v: want > 0", name, d))
		}
	}
	if c.Network != "sim" && c.Network != "loopback" {
		errs = append(errs, fmt.Errorf("scale: Network %q: want sim or loopback", c.Network))
	}
	if c.Dilation < 1 || c.Loss < 0 || c.Loss >= 1 || c.Latency < 0 || c.Jitter < 0 {
		errs = append(errs, fmt.Errorf("scale: Dilation %v (want ≥ 1), Loss %v (0..1), Latency %v, Jitter %v (≥ 0)",
			c.Dilation, c.Loss, c.Latency, c.Jitter))
	}
	if c.Target < 1 {
		errs = append(errs, fmt.Errorf("scale: Target %d: want ≥ 1", c.Target))
	}
	return errors.Join(errs...)
}
