// Command soak runs the local stack under steady load (10 minutes by default) and checks that no
// gateway or router grows its heap or goroutine count. `make soak` runs it; see docs/reliability.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchyard-dev/switchyard/tests/soak"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string) int {
	cfg := soak.DefaultConfig()
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.StringVar(&cfg.StackConfig, "config", cfg.StackConfig, "local stack file")
	fs.BoolVar(&cfg.FreePorts, "free-ports", cfg.FreePorts, "move the routers to free ports (run beside `make run`)")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "logs and secrets (default: a temporary directory)")
	fs.StringVar(&cfg.BinDir, "bin-dir", cfg.BinDir, "directory of the Switchyard binaries")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long load is sent")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "start of the run left out of the verdict")
	fs.DurationVar(&cfg.Interval, "interval", cfg.Interval, "time between samples")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "requests per second to each region's router")
	fs.IntVar(&cfg.OutputTokens, "output-tokens", cfg.OutputTokens, "mean output tokens per request")
	fs.Float64Var(&cfg.Heap.Ratio, "heap-tolerance", cfg.Heap.Ratio, "heap growth allowed, as a fraction")
	fs.Float64Var(
		&cfg.Goroutine.Ratio,
		"goroutine-tolerance",
		cfg.Goroutine.Ratio,
		"goroutine growth allowed, as a fraction",
	)
	fs.Float64Var(&cfg.MinSuccess, "min-success", cfg.MinSuccess, "fraction of requests that must succeed")
	fs.StringVar(
		&cfg.ProfileDir,
		"profile-dir",
		cfg.ProfileDir,
		"write every process's heap profile here when the warm-up ends and when the load ends",
	)
	samples := fs.String("samples", "", "also write every sample to this CSV file")
	judge := fs.String(
		"judge",
		"",
		"run nothing: judge the samples a --samples run saved in this CSV file again, with --warmup and the tolerances",
	)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *judge != "" {
		return rejudge(cfg, *judge)
	}
	cfg.Out = os.Stdout
	rep, err := soak.Run(ctx, cfg)
	if rep != nil {
		rep.Write(os.Stdout)
		if err := writeSamples(rep, *samples); err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			return 1
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 1
	}
	if !rep.Pass {
		return 1
	}
	return 0
}

// writeSamples writes the report's samples to path as CSV ("" = nowhere).
func writeSamples(rep *soak.Report, path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := rep.WriteSamples(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// rejudge judges saved samples again and returns the exit code: 0 on PASS, 1 on FAIL or error.
func rejudge(cfg soak.Config, path string) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 1
	}
	defer f.Close()
	procs, err := soak.ReadSamples(f)
	if err == nil && cfg.Warmup < 0 {
		err = fmt.Errorf("--warmup %v is negative", cfg.Warmup)
	}
	var rep *soak.Report
	if err == nil {
		rep, err = soak.Rejudge(cfg, procs)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: %s: %v\n", path, err)
		return 1
	}
	rep.Write(os.Stdout)
	if !rep.Pass {
		return 1
	}
	return 0
}
