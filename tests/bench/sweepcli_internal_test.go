package bench

import (
	"bytes"
	"context"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestSweepFlagsRefused: bad sweep flags exit 2 with the reason, before anything is built.
func TestSweepFlagsRefused(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"scenario", []string{"--sweep", "--scenario=mixed-fleet"}, "--scenarios"},
		{"bad load", []string{"--sweep", "--loads=0.5,lots"}, "--loads"},
		{"load out of range", []string{"--sweep", "--loads=3"}, "loads"},
		{"tier 2", []string{"--sweep", "--scenarios=region-burst"}, "only Tier 1"},
		{"no seeds", []string{"--sweep", "--seeds=0"}, "seeds"},
		{"capacity", []string{"--sweep", "--capacity=10"}, "capacity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := Main(
				context.Background(),
				tt.args,
				io.Discard,
				&stderr,
			); code != 2 ||
				!strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}

// TestSweepQuickFlags: --quick picks the quick loads, seeds and duration unless given.
func TestSweepQuickFlags(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		loads []float64
		seeds int
	}{
		{[]string{"--sweep", "--quick"}, QuickLoads, QuickSeeds},
		{[]string{"--sweep", "--quick", "--seeds=3", "--loads=0.7"}, []float64{0.7}, 3},
		{[]string{"--sweep"}, DefaultLoads, 5},
	} {
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		quick := fs.Bool("quick", false, "")
		fs.Duration("duration", 0, "")
		sw := addSweepFlags(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		cfg, err := sw.sweepConfig(fs, DefaultConfig(), *quick)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cfg.Loads, tt.loads) || cfg.Seeds != tt.seeds ||
			(*quick && cfg.Bench.Duration != QuickSweepDuration) {
			t.Errorf("%v: loads %v seeds %d duration %v", tt.args, cfg.Loads, cfg.Seeds, cfg.Bench.Duration)
		}
		if len(cfg.Scenarios) != len(Tier1Scenarios()) || !strings.HasSuffix(cfg.Out, "sweep") {
			t.Errorf("%v: %d scenarios, out %s", tt.args, len(cfg.Scenarios), cfg.Out)
		}
	}
}
