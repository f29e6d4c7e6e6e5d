package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
	"github.com/switchyard-dev/switchyard/tests/loadgen/trace"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// run performs one command invocation.
func run(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	if o.ListWorkloads {
		return listWorkloads(stdout)
	}
	logger, err := newLogger(o, stderr)
	if err != nil {
		return err
	}
	w, err := loadWorkload(o)
	if err != nil {
		return err
	}
	targets, err := parseTargets(o.Targets)
	if err != nil {
		return err
	}
	cfg := loadgen.DefaultConfig()
	cfg.Workload, cfg.Seed, cfg.Logger = w, o.Seed, logger
	cfg.MaxInFlight, cfg.RequestTimeout = o.MaxInFlight, o.Timeout
	if o.Progress || isTerminal(stderr) {
		cfg.Progress = stderr
	}
	return runAndReport(ctx, cfg, targets, o, stdout)
}

// runAndReport runs and writes the reports, also for a run stopped early.
func runAndReport(
	ctx context.Context,
	cfg loadgen.Config,
	targets []loadgen.Target,
	o *options,
	stdout io.Writer,
) error {
	w, logger := cfg.Workload, cfg.Logger
	logger.Info("run starting", "workload", w.Name, "rate", w.MeanRate(), "duration", w.Duration, "targets", len(targets))
	res, runErr := loadgen.Run(ctx, cfg, targets)
	if res == nil {
		return runErr
	}
	rep, err := report.Summarize(res, o.Baseline)
	if err != nil {
		return err
	}
	if err := writeReports(o, rep, stdout); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("run stopped early (%w); reports cover the requests sent", runErr)
	}
	return nil
}

// loadWorkload loads the workload and applies the overriding flags.
func loadWorkload(o *options) (*workload.Workload, error) {
	if o.Workload == "" {
		return nil, errors.New("--workload: required (one of " + strings.Join(workload.Names(), ", ") + ", or a YAML file)")
	}
	if o.Rate > 0 && o.Capacity > 0 {
		return nil, errors.New("--rate and --capacity: give one, not both")
	}
	w, err := workload.Load(o.Workload)
	steps := []struct {
		on    bool
		apply func(*workload.Workload) (*workload.Workload, error)
	}{
		{o.Duration != 0, func(w *workload.Workload) (*workload.Workload, error) { return w.WithDuration(o.Duration) }},
		{o.Rate != 0, func(w *workload.Workload) (*workload.Workload, error) { return w.WithRate(o.Rate) }},
		{o.Capacity != 0, func(w *workload.Workload) (*workload.Workload, error) { return w.WithCapacity(o.Capacity) }},
		{o.Model != "", func(w *workload.Workload) (*workload.Workload, error) { return w.WithModel(o.Model) }},
		{o.Adapters != "", func(w *workload.Workload) (*workload.Workload, error) {
			return w.WithAdapters(strings.Split(o.Adapters, ","))
		}},
		{o.Trace != (traceOptions{}), o.Trace.apply},
		{o.SLOTTFT != 0 || o.SLOTPOT != 0, func(w *workload.Workload) (*workload.Workload, error) {
			slo := workload.SLO{TTFT: o.SLOTTFT, TPOT: o.SLOTPOT}
			if w.SLO != nil && o.SLOTTFT == 0 {
				slo.TTFT = w.SLO.TTFT
			}
			if w.SLO != nil && o.SLOTPOT == 0 {
				slo.TPOT = w.SLO.TPOT
			}
			return w.WithSLO(slo)
		}},
	}
	for _, s := range steps {
		if err != nil || !s.on {
			continue
		}
		w, err = s.apply(w)
	}
	if err != nil {
		return nil, fmt.Errorf("--workload=%s: %w", o.Workload, err)
	}
	return w, nil
}

// apply sets the trace flags that were given on a trace workload.
func (t traceOptions) apply(w *workload.Workload) (*workload.Workload, error) {
	if !w.IsTrace() {
		return nil, fmt.Errorf(
			"--trace flags: workload %s replays no trace (trace workloads: trace-conversation, trace-azure-conv, or a file with trace:)",
			w.Name,
		)
	}
	if t.TimeScale < 0 || t.PromptScale < 0 || t.OutputScale < 0 || t.Start < 0 || t.MaxRequests < 0 {
		return nil, errors.New("--trace flags: scales, start and max requests must not be negative")
	}
	return w.WithTrace(func(tr *workload.Trace) {
		if t.Path != "" {
			tr.Path = t.Path
		}
		if t.Format != "" {
			tr.Format = trace.Format(t.Format)
		}
		for _, f := range []struct{ src, dst *float64 }{{&t.TimeScale, &tr.TimeScale}, {&t.PromptScale, &tr.PromptScale}, {&t.OutputScale, &tr.OutputScale}} {
			if *f.src != 0 {
				*f.dst = *f.src
			}
		}
		if t.Start != 0 {
			tr.Start = t.Start
		}
		if t.MaxRequests != 0 {
			tr.MaxRequests = t.MaxRequests
		}
	})
}

func parseTargets(specs []string) ([]loadgen.Target, error) {
	if len(specs) == 0 {
		return nil, errors.New("--target: at least one required")
	}
	targets := make([]loadgen.Target, 0, len(specs))
	for _, s := range specs {
		t, err := loadgen.ParseTarget(s)
		if err != nil {
			return nil, fmt.Errorf("--target: %w", err)
		}
		targets = append(targets, t)
	}
	return targets, nil
}

// writeReports prints the markdown report and writes the requested files.
func writeReports(o *options, rep *report.Report, stdout io.Writer) error {
	var md bytes.Buffer
	if err := report.WriteMarkdown(&md, rep); err != nil {
		return err
	}
	if _, err := stdout.Write(md.Bytes()); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	return report.WriteFiles(rep, report.Files{JSON: o.Out, Markdown: o.Markdown, Plot: o.Plot})
}

func listWorkloads(stdout io.Writer) error {
	for _, name := range workload.Names() {
		w, err := workload.Load(name)
		if err != nil {
			return err
		}
		rate := fmt.Sprintf("%g req/s", w.MeanRate())
		switch {
		case w.IsClosedLoop():
			rate = fmt.Sprintf("%d in flight", w.Arrival.Concurrency)
		case w.IsTrace():
			rate = fmt.Sprintf("%s ×%g", w.Trace.Format, w.Trace.TimeScale)
		}
		fmt.Fprintf(stdout, "%-15s %-12s %-6s seed %-3d %s\n", name, rate, w.Duration, w.Seed, w.Description)
	}
	return nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
