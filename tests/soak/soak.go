// Package soak runs the local stack under steady load for a long time, samples the heap in use
// and the goroutine count of every gateway and router from their /metrics, and judges whether
// either grows: the median of the last third of the samples after warm-up against the median of
// the first third, with a tolerance. It is what `make soak` runs (not part of `make test`).
package soak

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/switchyard-dev/switchyard/tests/devstack"
	"github.com/switchyard-dev/switchyard/tests/harness"
	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// Config is one soak run.
type Config struct {
	// StackConfig is the local stack file (default deploy/local/devstack.yaml).
	StackConfig string
	// FreePorts moves the routers to free ports, so the soak runs beside `make run` (default true).
	FreePorts bool
	// DataDir holds the stack's logs and secrets ("" = a new temporary directory, removed after).
	DataDir string
	// BinDir holds the Switchyard binaries.
	BinDir string
	// Duration is how long load is sent (default 10 min).
	Duration time.Duration
	// Warmup is the start of the run left out of the verdict (default 1 min).
	Warmup time.Duration
	// Interval is the time between samples (default 5 s).
	Interval time.Duration
	// Rate is the requests per second sent to each region's router (default 2).
	Rate float64
	// OutputTokens is the mean max_tokens of a request (default 64).
	OutputTokens int
	// Heap and Goroutine bound the growth allowed (defaults 20% + 4 MiB, 20% + 20).
	Heap, Goroutine Tolerance
	// MinSuccess is the fraction of requests that must succeed (default 0.9): a soak whose
	// requests fail exercises error paths only.
	MinSuccess float64
	// ProfileDir, when set, starts the stack's processes with --enable-pprof and writes every
	// gateway's and router's heap profile there twice: when the warm-up ends
	// (NAME-heap-start.pb.gz) and when the load ends (NAME-heap-end.pb.gz), so `go tool pprof
	// -diff_base=NAME-heap-start.pb.gz NAME-heap-end.pb.gz` names what grew.
	ProfileDir string
	// Out receives progress and the report.
	Out io.Writer
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		StackConfig: "deploy/local/devstack.yaml", FreePorts: true,
		Duration: 10 * time.Minute, Warmup: time.Minute, Interval: 5 * time.Second,
		Rate: 2, OutputTokens: 64,
		Heap:       Tolerance{Ratio: 0.2, Slack: 4 << 20},
		Goroutine:  Tolerance{Ratio: 0.2, Slack: 20},
		MinSuccess: 0.9, Out: io.Discard,
	}
}

// Validate checks the config and names the offending field.
func (c Config) Validate() error {
	switch {
	case c.StackConfig == "":
		return errors.New("soak: --stack-config is required")
	case c.Duration <= 0 || c.Interval <= 0 || c.Warmup < 0:
		return errors.New("soak: --duration and --interval must be positive, --warmup not negative")
	case c.Duration-c.Warmup < minSamples*c.Interval:
		return fmt.Errorf("soak: --duration %v leaves fewer than %d samples after --warmup %v at --interval %v",
			c.Duration, minSamples, c.Warmup, c.Interval)
	case c.Rate <= 0 || c.OutputTokens < 1:
		return errors.New("soak: --rate and --output-tokens must be positive")
	case c.MinSuccess < 0 || c.MinSuccess > 1:
		return fmt.Errorf("soak: --min-success %v must be in [0,1]", c.MinSuccess)
	}
	return nil
}

// Report is the outcome of a soak run.
type Report struct {
	Processes []*Process
	// Sent and OK count the requests of the load.
	Sent, OK int
	// Verdicts hold one line per process and resource; Pass is the overall verdict.
	Verdicts []Verdict
	Pass     bool
	// Rejudged marks a report made from saved samples (Rejudge): it has no request counts.
	Rejudged bool
}

// Verdict is the judgement on one resource of one process.
type Verdict struct {
	Process, Resource string
	Judgement
}

// Run starts the stack, loads it for Duration while sampling, stops it and judges the samples.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	stack, err := devstack.LoadConfig(cfg.StackConfig)
	if err != nil {
		return nil, err
	}
	if cfg.FreePorts {
		if err := freeRouterPorts(stack); err != nil {
			return nil, err
		}
	}
	if cfg.DataDir == "" {
		if cfg.DataDir, err = os.MkdirTemp("", "switchyard-soak-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(cfg.DataDir)
	}
	sctx, stopStack := context.WithCancel(ctx)
	defer stopStack()
	ready, stopped := make(chan struct{}), make(chan error, 1)
	go func() {
		stopped <- devstack.Run(sctx, stack, devstack.Options{DataDir: cfg.DataDir, BinDir: cfg.BinDir,
			ReadyTimeout: 2 * time.Minute, StopGrace: 45 * time.Second, Out: io.Discard, Ready: ready,
			Pprof: cfg.ProfileDir != ""})
	}()
	select {
	case <-ready:
	case err := <-stopped:
		return nil, fmt.Errorf("soak: stack did not start: %w", err)
	}
	rep, runErr := load(ctx, cfg, stack)
	stopStack()
	return rep, errors.Join(runErr, <-stopped)
}

// freeRouterPorts moves every router's fixed addresses to free loopback ports.
func freeRouterPorts(stack *devstack.Config) error {
	for i := range stack.Regions {
		for _, addr := range []*string{&stack.Regions[i].Router.Listen, &stack.Regions[i].Router.Admin} {
			a, err := harness.FreePort()
			if err != nil {
				return err
			}
			*addr = a
		}
	}
	return nil
}

// load sends the workload to every region's router while sampling every process, then judges.
func load(ctx context.Context, cfg Config, stack *devstack.Config) (*Report, error) {
	procs, err := Discover(filepath.Join(cfg.DataDir, "logs"))
	if err != nil {
		return nil, err
	}
	w, target, err := soakWorkload(cfg, stack)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Out, "soak: %d processes, %g req/s per region for %v, a sample every %v\n",
		len(procs), cfg.Rate, cfg.Duration, cfg.Interval)
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return nil, err
		}
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var res *loadgen.Result
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		var err error
		res, err = loadgen.Run(lctx, loadgen.Config{Workload: w, RequestTimeout: 2 * time.Minute}, []loadgen.Target{target})
		done <- err
	}()
	if err := sample(ctx, cfg, procs, start, done); err != nil {
		cancel()
		if lerr := <-done; lerr != nil && !errors.Is(lerr, context.Canceled) {
			err = errors.Join(err, lerr)
		}
		return nil, err
	}
	rep := &Report{Processes: procs}
	for _, s := range res.Targets[0].Samples {
		rep.Sent++
		if s.OK() {
			rep.OK++
		}
	}
	return rep, rep.judge(cfg)
}

// sample scrapes every process each Interval until the load ends, and takes the heap profiles
// (with cfg.ProfileDir) when the warm-up ends and at the last sample.
func sample(ctx context.Context, cfg Config, procs []*Process, start time.Time, done <-chan error) error {
	client := &http.Client{Timeout: 10 * time.Second}
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	profiled := false
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("soak: load: %w", err)
			}
			return profiles(ctx, cfg, client, procs, "end")
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		at := time.Since(start)
		if !profiled && at >= cfg.Warmup {
			profiled = true
			if err := profiles(ctx, cfg, client, procs, "start"); err != nil {
				return err
			}
		}
		for _, p := range procs {
			if err := p.Sample(ctx, client, at); err != nil {
				return err // a process that stops answering its metrics is a failed soak
			}
		}
		if n := len(procs[0].Points); n%12 == 0 {
			fmt.Fprintf(cfg.Out, "soak: %v elapsed, %d samples per process\n", at.Round(time.Second), n)
		}
	}
}

// soakWorkload is Poisson load of streamed chat requests sent to every region's router.
func soakWorkload(cfg Config, stack *devstack.Config) (*workload.Workload, loadgen.Target, error) {
	src := fmt.Sprintf(`name: soak
seed: 7
duration: %s
endpoint: chat
model: %q
stream: true
ignore_eos: true
prompt: {dist: lognormal, mean: 300, sigma: 0.5, max: 2000}
output: {dist: lognormal, mean: %d, sigma: 0.4, max: 512}
regions:
`, cfg.Duration, stack.Model, cfg.OutputTokens)
	target := loadgen.Target{Name: "stack", RegionURLs: map[string]string{}}
	for _, r := range stack.Regions {
		src += fmt.Sprintf("  - {name: %s, arrival: {process: poisson, rate: %g}}\n", r.Name, cfg.Rate)
		target.RegionURLs[r.Name] = "http://" + r.Router.Listen
		if target.URL == "" {
			target.URL = "http://" + r.Router.Listen
		}
	}
	w, err := workload.Parse("soak", []byte(src))
	return w, target, err
}

// judge fills the verdicts: every resource of every process within its tolerance, and enough
// requests served.
func (r *Report) judge(cfg Config) error {
	r.Pass = r.Rejudged || r.Sent > 0 && float64(r.OK) >= cfg.MinSuccess*float64(r.Sent)
	for _, p := range r.Processes {
		for _, res := range []struct {
			name  string
			value func(Point) float64
			tol   Tolerance
		}{{"heap_inuse_bytes", Heap, cfg.Heap}, {"goroutines", Goroutines, cfg.Goroutine}} {
			j, err := Judge(p.Points, cfg.Warmup, res.value, res.tol)
			if err != nil {
				return fmt.Errorf("%s: %w", p.Name, err)
			}
			r.Verdicts = append(r.Verdicts, Verdict{Process: p.Name, Resource: res.name, Judgement: j})
			r.Pass = r.Pass && j.OK
		}
	}
	return nil
}

// Write prints the report as a table and the verdict.
func (r *Report) Write(w io.Writer) {
	if r.Rejudged {
		fmt.Fprint(w, "\nsaved samples judged again (no request counts)\n\n")
	} else {
		fmt.Fprintf(w, "\nrequests: %d sent, %d ok (%.1f%%)\n\n", r.Sent, r.OK, 100*float64(r.OK)/float64(max(r.Sent, 1)))
	}
	fmt.Fprintf(
		w,
		"%-24s %-17s %8s %14s %14s %8s  %s\n",
		"PROCESS",
		"RESOURCE",
		"SAMPLES",
		"FIRST THIRD",
		"LAST THIRD",
		"GROWTH",
		"VERDICT",
	)
	for _, v := range r.Verdicts {
		verdict := "ok"
		if !v.OK {
			verdict = "GROWS"
		}
		fmt.Fprintf(
			w,
			"%-24s %-17s %8d %14.0f %14.0f %+7.1f%%  %s\n",
			v.Process,
			v.Resource,
			v.Samples,
			v.First,
			v.Last,
			100*v.Growth(),
			verdict,
		)
	}
	if r.Pass {
		fmt.Fprintln(w, "\nsoak: PASS (no growth beyond tolerance)")
	} else {
		fmt.Fprintln(w, "\nsoak: FAIL")
	}
}

// WriteSamples writes every sample as CSV: process, seconds since the load started, heap in use
// in bytes, goroutines.
func (r *Report) WriteSamples(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(samplesHeader); err != nil {
		return err
	}
	for _, p := range r.Processes {
		for _, pt := range p.Points {
			rec := []string{
				p.Name,
				fmt.Sprintf("%.1f", pt.At.Seconds()),
				fmt.Sprintf("%.0f", pt.HeapBytes),
				fmt.Sprintf("%.0f", pt.Goroutines),
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// profiles writes every process's heap profile to cfg.ProfileDir as NAME-heap-WHEN.pb.gz (nothing
// without a ProfileDir).
func profiles(ctx context.Context, cfg Config, client *http.Client, procs []*Process, when string) error {
	if cfg.ProfileDir == "" {
		return nil
	}
	for _, p := range procs {
		path := filepath.Join(cfg.ProfileDir, p.Name+"-heap-"+when+".pb.gz")
		if err := p.HeapProfile(ctx, client, path); err != nil {
			return err
		}
	}
	fmt.Fprintf(cfg.Out, "soak: heap profiles (%s) in %s\n", when, cfg.ProfileDir)
	return nil
}
