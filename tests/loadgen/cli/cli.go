// Package cli is the loadgen command: flags (each also read from SWITCHYARD_<FLAG> when not given),
// one run against every target, and the reports (markdown on stdout, and JSON, markdown and PNG
// files on request).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/contract/flagenv"
	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// options are the command's flags.
type options struct {
	Targets       []string
	Workload      string
	Duration      time.Duration
	Rate          float64
	Capacity      float64
	Seed          uint64
	Model         string
	Adapters      string
	Baseline      string
	Out           string
	Markdown      string
	Plot          string
	Progress      bool
	MaxInFlight   int
	Timeout       time.Duration
	LogFormat     string
	LogLevel      string
	ListWorkloads bool
	Trace         traceOptions
	SLOTTFT       time.Duration
	SLOTPOT       time.Duration
}

// traceOptions are the flags that change a trace workload's replay.
type traceOptions struct {
	Path        string
	Format      string
	TimeScale   float64
	PromptScale float64
	OutputScale float64
	Start       time.Duration
	MaxRequests int
}

// targetList is the repeatable --target flag.
type targetList []string

func (t *targetList) String() string     { return strings.Join(*t, " ") }
func (t *targetList) Set(v string) error { *t = append(*t, v); return nil }

// envPrefix starts the environment variable of every flag: --max-in-flight is
// SWITCHYARD_MAX_IN_FLIGHT. SWITCHYARD_TARGET holds one or more targets separated by spaces.
const envPrefix = flagenv.Prefix + "_"

func newFlagSet(o *options, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := loadgen.DefaultConfig()
	fs.Var(
		(*targetList)(&o.Targets),
		"target",
		"system under test: URL, NAME=URL or NAME=REGION@URL,REGION@URL (repeatable)",
	)
	fs.StringVar(&o.Workload, "workload", "", "workload name ("+strings.Join(workload.Names(), ", ")+") or YAML file")
	fs.DurationVar(&o.Duration, "duration", 0, "how long to send arrivals (default: the workload's, usually 60s)")
	fs.Float64Var(&o.Rate, "rate", 0, "mean arrival rate in req/s (default: the workload's)")
	fs.Float64Var(
		&o.Capacity,
		"capacity",
		0,
		"measured fleet capacity in req/s; the rate becomes the workload's load × capacity",
	)
	fs.Uint64Var(&o.Seed, "seed", 0, "seed of the request sequence (default: the workload's)")
	fs.StringVar(&o.Model, "model", "", "base model name sent in requests (default: the workload's)")
	fs.StringVar(&o.Adapters, "adapters", "", "comma-separated adapter names replacing the workload's, in order")
	fs.StringVar(&o.Baseline, "baseline", "", "target the ratios are taken against (default: round-robin when present)")
	fs.StringVar(&o.Out, "out", "", "write the JSON report to this file")
	fs.StringVar(&o.Markdown, "markdown", "", "write the markdown report to this file")
	fs.StringVar(&o.Plot, "plot", "", "write the TTFT CDF plot (PNG) to this file")
	fs.BoolVar(
		&o.Progress,
		"progress",
		false,
		"print a progress line every 5s on stderr (default when stderr is a terminal)",
	)
	fs.IntVar(
		&o.MaxInFlight,
		"max-in-flight",
		d.MaxInFlight,
		"requests in flight per target before arrivals count as overload errors",
	)
	fs.DurationVar(&o.Timeout, "timeout", d.RequestTimeout, "per-request timeout")
	fs.StringVar(&o.LogFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.BoolVar(&o.ListWorkloads, "list-workloads", false, "list the embedded workloads and exit")
	fs.StringVar(&o.Trace.Path, "trace", "", "trace workloads: the trace file (default: the workload's trace.path)")
	fs.StringVar(&o.Trace.Format, "trace-format", "", "trace workloads: mooncake or azure (default: the workload's)")
	fs.Float64Var(
		&o.Trace.TimeScale,
		"trace-time-scale",
		0,
		"trace workloads: replay at this multiple of the recorded rate (default: the workload's)",
	)
	fs.Float64Var(
		&o.Trace.PromptScale,
		"trace-prompt-scale",
		0,
		"trace workloads: multiply prompt lengths (default: the workload's)",
	)
	fs.Float64Var(
		&o.Trace.OutputScale,
		"trace-output-scale",
		0,
		"trace workloads: multiply output lengths (default: the workload's)",
	)
	fs.DurationVar(
		&o.Trace.Start,
		"trace-start",
		0,
		"trace workloads: skip this much of the recording (default: the workload's)",
	)
	fs.IntVar(
		&o.Trace.MaxRequests,
		"trace-max-requests",
		0,
		"trace workloads: replay at most this many requests (default: the workload's)",
	)
	fs.DurationVar(&o.SLOTTFT, "slo-ttft", 0, "goodput: TTFT bound per request (default: the workload's slo)")
	fs.DurationVar(&o.SLOTPOT, "slo-tpot", 0, "goodput: time per output token bound (default: the workload's slo)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: loadgen --target=URL|NAME=URL [--target=...] --workload=NAME|FILE [flags]\n\n"+
			"Sends a workload's request sequence to every target and reports TTFT, ITL and E2E percentiles.\n"+
			"Every flag may also come from %s<FLAG> (upper case, '-' as '_').\n\nFlags:\n", envPrefix)
		fs.PrintDefaults()
	}
	return fs
}

// parse reads args, then the environment for every flag args did not set.
func parse(args []string, getenv func(string) string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := newFlagSet(o, stderr)
	if _, err := flagenv.Parse(
		fs,
		args,
		flagenv.Options{EnvPrefix: flagenv.Prefix, Getenv: getenv, SplitEnv: []string{"target"}},
	); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags are written --name=value)", fs.Arg(0))
	}
	return o, nil
}

// Main runs the command and returns its exit code: 0 on success (failed requests are
// measurements, not failures), 2 for bad flags, 1 otherwise.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, os.Getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 2
	}
	if err := run(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 1
	}
	return 0
}

func newLogger(o *options, stderr io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch o.LogFormat {
	case "text":
		return slog.New(slog.NewTextHandler(stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", o.LogFormat)
}
