// Package oracle computes the routing benchmarks' `oracle` baseline: a lower bound on time to
// first token obtained offline, in modelsim's engine on a virtual clock (no network, no scrape lag,
// no sleeping).
//
// Replay feeds a workload's generated requests, in arrival order, to a simulated fleet. For each
// arrival it advances every pod to that instant, clones each pod's exact state (KV cache, prefix
// cache, queues, adapter slots, jitter generator), submits the request to every clone, runs each
// clone until the request's first token and sends the request, for real, to the pod whose clone
// gave the earliest first token (ties go to the lowest pod index). Once every request is placed,
// all pods run to completion and each request's actual timings are reported.
//
// The choice is greedy: each request takes the best pod given the requests before it and blind to
// the ones after, which may still delay it (they join the same batches). Its figures are the best
// a router that knows every pod's state exactly can reach, the reference the measured policies
// are divided by.
package oracle

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
)

// Config configures a replay.
type Config struct {
	// Profiles are the pods' GPU profiles in fleet order: pod i runs Profiles[i]. Each pod is the
	// modelsim server's default configuration for its profile, seeded i+1 (as the benchmarks' fleets).
	Profiles []string
	// MaxLoras is every pod's number of adapter slots; when > 0 the pods serve the workload's
	// adapters, when 0 a workload that names adapters cannot be replayed.
	MaxLoras int
	// Assign, when set, replaces the oracle's choice: request i (in arrival order) goes to pod
	// Assign(i). It computes baselines such as round robin with the same simulator.
	Assign func(i int) int
	// Compare, with Assign, also simulates each request on every pod it may reach at the moment
	// it is placed, as the oracle's own choice does, and reports those first tokens
	// (Result.Candidates) beside the pod it was assigned: how far a fixed placement was from the
	// earliest first token at each decision. It costs one engine clone per pod and request.
	Compare bool
	// Network, when set, spreads the fleet over regions: it returns the round trip between
	// request r's client and pod, and whether r may go to that pod at all (a local-only baseline
	// allows only pods of the client's region). The round trip is added to the request's times;
	// the request still joins the pod at its arrival, so the one-way trip does not delay its place
	// in the pod's queue: the bound stays a lower bound. nil: every pod, no round trip.
	Network func(r *workload.Request, pod int) (rtt time.Duration, ok bool)
	// Logger receives progress at debug level; nil discards it.
	Logger *slog.Logger
}

// DefaultConfig returns a configuration with no pods (set Profiles), no adapter slots and the
// oracle's own choice.
func DefaultConfig() Config {
	return Config{
		Profiles: nil, // required
		MaxLoras: 0,   // no adapters
		Assign:   nil, // earliest first token
		Compare:  false,
		Network:  nil, // one place, no round trips
		Logger:   nil, // discard
	}
}

// maxLoras bounds Config.MaxLoras as modelsim's server does.
const maxLoras = 1024

// Validate reports the first unusable field by name.
func (c Config) Validate() error {
	if len(c.Profiles) == 0 {
		return errors.New("oracle config: profiles: at least one pod is required")
	}
	for i, p := range c.Profiles {
		if _, err := profile.Lookup(p); err != nil {
			return fmt.Errorf("oracle config: profiles[%d]: %w", i, err)
		}
	}
	if c.MaxLoras < 0 || c.MaxLoras > maxLoras {
		return fmt.Errorf("oracle config: max loras: %d must be in [0, %d]", c.MaxLoras, maxLoras)
	}
	return nil
}

// ParseFleet reads a fleet written as comma-separated PROFILExCOUNT items (a bare profile counts
// once), e.g. "h100x4,a10gx4", into one profile name per pod.
func ParseFleet(spec string) ([]string, error) {
	var pods []string
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		name, count := item, 1
		if i := strings.LastIndexByte(item, 'x'); i > 0 {
			n, err := strconv.Atoi(item[i+1:])
			if err != nil || n < 1 {
				return nil, fmt.Errorf("fleet %q: count in %q must be a positive integer", spec, item)
			}
			name, count = item[:i], n
		}
		if _, err := profile.Lookup(name); err != nil {
			return nil, fmt.Errorf("fleet %q: %w", spec, err)
		}
		for range count {
			pods = append(pods, name)
		}
	}
	return pods, nil
}
