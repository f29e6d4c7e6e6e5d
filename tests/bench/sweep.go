package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// SweepConfig is one sweep's settings: every scenario at every load, on Seeds report seeds.
type SweepConfig struct {
	// Bench holds the settings every cell's run shares: Policies, Duration, TimeScale,
	// ScrapeInterval, GatewayBin, Physics, ReportCachedTokens, LogLevel. Scenario, Load, Seed,
	// Capacity, SLO and Out are set per cell.
	Bench Config
	// Scenarios are swept (Tier 1 only; default Tier1Scenarios()).
	Scenarios []Scenario
	// Loads are the offered loads, fractions of the fleet capacity (see OfferedLoad).
	Loads []float64
	// Seeds is how many report seeds (ReportSeeds) each (scenario, load) runs.
	Seeds int
	// SLO is goodput's objective: TTFT and mean inter-token gap (TPOT), simulated time.
	SLO workload.SLO
	// Oracle also replays every cell's requests in the simulated oracle, as a reference column.
	Oracle bool
	// Resume reuses a cell's results file when it was measured with the same configuration.
	Resume bool
	// Sensitivity adds the default profile's weight-sensitivity table (see SensitivityConfig).
	Sensitivity SensitivityConfig
	// Out is the directory of the cells' files and the summaries.
	Out string
	// Progress receives the progress bar (nil = none).
	Progress io.Writer

	// Hooks replaced by tests: how a cell runs and how a scenario's capacity is measured.
	runCell  func(ctx context.Context, c *Cell) (*CellResult, error)
	capacity func(ctx context.Context, sc Scenario) (float64, error)
	now      func() time.Time
}

// DefaultLoads are the sweep's offered loads.
var DefaultLoads = []float64{0.3, 0.5, 0.7, 0.9}

// DefaultSweepConfig returns the full sweep's settings.
func DefaultSweepConfig() SweepConfig {
	return SweepConfig{
		Bench:       DefaultConfig(),
		Scenarios:   Tier1Scenarios(),
		Loads:       slices.Clone(DefaultLoads),
		Seeds:       5,                                                                 // report seeds per (scenario, load)
		SLO:         workload.SLO{TTFT: 2 * time.Second, TPOT: 100 * time.Millisecond}, // interactive chat
		Oracle:      true,                                                              // cheap: seconds per cell
		Resume:      true,                                                              // reuse matching cells
		Sensitivity: DefaultSensitivityConfig(),
		Out:         filepath.Join("bench-results", "sweep"),
	}
}

// Tier1Scenarios returns the scenarios a sweep runs: every Tier 1 one whose rate follows the
// fleet capacity (trace scenarios keep their trace's rate, Tier 2 ones compare router modes).
func Tier1Scenarios() []Scenario {
	var out []Scenario
	for _, s := range scenarios {
		if !s.Regional() && !isTraceWorkload(s.Workload) && s.Policies == nil {
			out = append(out, s)
		}
	}
	return out
}

func isTraceWorkload(name string) bool {
	w, err := workload.Load(name)
	return err == nil && w.IsTrace()
}

// Validate reports the first unusable field.
func (c *SweepConfig) Validate() error {
	if len(c.Scenarios) == 0 {
		return errors.New("bench: sweep: scenarios: at least one required")
	}
	for _, s := range c.Scenarios {
		if s.Regional() || isTraceWorkload(s.Workload) {
			return fmt.Errorf("bench: sweep: scenario %s: only Tier 1 scenarios with a load can be swept", s.Name)
		}
	}
	if len(c.Loads) == 0 {
		return errors.New("bench: sweep: loads: at least one required")
	}
	for _, l := range c.Loads {
		if !(l > 0) || l > maxLoad {
			return fmt.Errorf("bench: sweep: loads: %v must be in (0, %g]", l, maxLoad)
		}
	}
	if err := checkSeedCount("sweep: seeds", c.Seeds); err != nil {
		return err
	}
	if c.SLO.TTFT <= 0 || c.SLO.TPOT <= 0 {
		return fmt.Errorf("bench: sweep: slo: TTFT and ITL bounds must be > 0, got %s and %s", c.SLO.TTFT, c.SLO.TPOT)
	}
	if c.Out == "" {
		return errors.New("bench: sweep: out: required")
	}
	if c.Sensitivity.Enabled {
		if err := c.Sensitivity.validate(); err != nil {
			return err
		}
	}
	b := c.Bench
	b.Scenario, b.Out = c.Scenarios[0], c.Out
	if b.GatewayBin == "" && c.runCell != nil {
		b.GatewayBin = "(test)"
	}
	return b.Validate()
}

// Cell is one run of a sweep: a scenario at one load and seed, every policy side by side.
type Cell struct {
	Config CellConfig
	// Path is the cell's results file; Dir the run's own reports.
	Path, Dir string
	// Label names the cell in progress lines.
	Label string

	scenario Scenario
	capacity float64
	// policyFiles are the EndpointPickerConfig files of Config.PolicyConfigs' policies.
	policyFiles map[string]string
}

// SweepResult is what a sweep measured: every cell, and where its summaries went.
type SweepResult struct {
	Cells []*CellResult
	// Ran and Resumed count the cells measured now and those read back from their files.
	Ran, Resumed int
	// Files are the summaries written (markdown, JSON, plots).
	Files []string
}

// RunSweep runs every cell of cfg that has no matching results file (all of them without
// Resume), writes each cell's file as it finishes, then the per-scenario tables and plots and
// the sensitivity table.
func RunSweep(ctx context.Context, cfg SweepConfig) (*SweepResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	cells, err := planCells(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	prog := newProgress(cfg.Progress, len(cells), cfg.now)
	res := &SweepResult{}
	for _, c := range cells {
		r, resumed, err := runOrResume(ctx, &cfg, c, prog)
		if err != nil {
			return res, err
		}
		res.Cells = append(res.Cells, r)
		if resumed {
			res.Resumed++
		} else {
			res.Ran++
		}
	}
	prog.finish()
	files, err := writeSweep(&cfg, res.Cells)
	res.Files = files
	return res, err
}

func (c *SweepConfig) defaults() {
	if c.runCell == nil {
		c.runCell = func(ctx context.Context, cell *Cell) (*CellResult, error) { return runBenchCell(ctx, c, cell) }
	}
	if c.capacity == nil {
		c.capacity = func(ctx context.Context, sc Scenario) (float64, error) {
			w, err := workload.Load(sc.Workload)
			if err != nil {
				return 0, err
			}
			total, _, err := FleetCapacity(ctx, sc, w, c.Bench.Physics)
			return total, err
		}
	}
	if c.now == nil {
		c.now = time.Now
	}
}

// runOrResume reads c's results file when Resume is on and it matches, else runs the cell and
// writes the file.
func runOrResume(ctx context.Context, cfg *SweepConfig, c *Cell, prog *progress) (*CellResult, bool, error) {
	if cfg.Resume {
		r, ok, err := readCell(c.Path, &c.Config)
		if err != nil {
			return nil, false, err
		}
		if ok {
			prog.resumed(c.Label)
			return r, true, nil
		}
	}
	prog.starting(c.Label)
	start := cfg.now()
	r, err := cfg.runCell(ctx, c)
	if err != nil {
		return nil, false, fmt.Errorf("bench: sweep cell %s: %w", c.Label, err)
	}
	r.Config = c.Config
	r.ElapsedS = cfg.now().Sub(start).Seconds()
	r.Finished = cfg.now().UTC()
	if err := writeCell(c.Path, r); err != nil {
		return nil, false, err
	}
	prog.ran(cfg.now().Sub(start))
	return r, false, nil
}

// planCells lists every cell: the sweep's (scenario × load × report seed, in that order), then
// the sensitivity table's. It measures each scenario's fleet capacity once.
func planCells(ctx context.Context, cfg *SweepConfig) ([]*Cell, error) {
	measured := map[string]float64{}
	capacity := func(ctx context.Context, sc Scenario) (float64, error) {
		if c, ok := measured[sc.Name]; ok {
			return c, nil
		}
		c, err := cfg.capacity(ctx, sc)
		measured[sc.Name] = c
		return c, err
	}
	var cells []*Cell
	for _, sc := range cfg.Scenarios {
		c, err := capacity(ctx, sc)
		if err != nil {
			return nil, fmt.Errorf("bench: sweep: capacity of %s: %w", sc.Name, err)
		}
		for _, load := range cfg.Loads {
			for _, seed := range ReportSeeds(cfg.Seeds) {
				cells = append(cells, cfg.newCell("sweep", sc, c, load, seed, cfg.Bench.Policies, cfg.Bench.PolicyConfigs, ""))
			}
		}
	}
	if cfg.Sensitivity.Enabled {
		sens, err := sensitivityCells(ctx, cfg, capacity)
		if err != nil {
			return nil, err
		}
		cells = append(cells, sens...)
	}
	return cells, nil
}

// newCell builds a cell's configuration and paths; group tells apart cells of one seed that
// compare different policies (the sensitivity table's runs).
func (c *SweepConfig) newCell(
	kind string,
	sc Scenario,
	capacity, load float64,
	seed uint64,
	policies []string,
	files map[string]string,
	group string,
) *Cell {
	b := &c.Bench
	cc := CellConfig{
		Schema: CellSchema, Kind: kind, Scenario: sc.Name, Workload: sc.Workload, Fleet: pools(sc),
		Load: load, Seed: seed, Policies: slices.Clone(policies), CapacityRPS: capacity,
		DurationS: b.Duration.Seconds(), TimeScale: b.TimeScale,
		ScrapeIntervalMs: float64(b.ScrapeInterval) / float64(time.Millisecond),
		Physics:          physicsNote(b), ReportCachedTokens: b.ReportCachedTokens,
		SLOTTFTMs: float64(c.SLO.TTFT) / float64(time.Millisecond), SLOITLMs: float64(c.SLO.TPOT) / float64(time.Millisecond),
		Oracle:     c.Oracle && kind == "sweep",
		SLOHeaders: sloHeadersSpec(b.SLOHeaders),
	}
	if len(files) > 0 {
		cc.PolicyConfigs = map[string]string{}
		for p, f := range files {
			cc.PolicyConfigs[p] = fileDigest(f)
		}
	}
	name, label := "seed-"+strconv.FormatUint(seed, 10), fmt.Sprintf("%s %s load %.2f seed %d", kind, sc.Name, load, seed)
	if group != "" {
		name, label = name+"-"+group, label+" "+group
	}
	dir := filepath.Join(c.Out, "cells", kind+"-"+sc.Name, "load-"+strconv.FormatFloat(load, 'f', 2, 64))
	return &Cell{
		Config: cc, Path: filepath.Join(dir, name+".json"), Dir: filepath.Join(dir, name),
		Label:    label,
		scenario: sc, capacity: capacity, policyFiles: files,
	}
}

// fileDigest is the SHA-256 of a file's bytes ("unreadable" when it cannot be read, which the
// run then reports).
func fileDigest(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unreadable"
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// runBenchCell runs one cell with the bench: the oracle first (CPU only, on the virtual clock),
// then every policy's stack side by side.
func runBenchCell(ctx context.Context, cfg *SweepConfig, c *Cell) (*CellResult, error) {
	bc := cfg.Bench
	bc.Scenario, bc.Load, bc.Seed, bc.Capacity = c.scenario, c.Config.Load, c.Config.Seed, c.capacity
	bc.Policies, bc.PolicyConfigs, bc.Out, bc.LogDir, bc.Logger = c.Config.Policies, c.policyFiles, c.Dir, "", nil
	slo := cfg.SLO
	bc.SLO = &slo
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	out := &CellResult{}
	if c.Config.Oracle {
		sim, err := prepareWorkload(ctx, &bc, &Result{})
		if err != nil {
			return nil, err
		}
		reqs, err := workload.Generate(sim, sim.Seed)
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		if out.Oracle, err = oracleFigures(ctx, c.scenario, sim, reqs, bc.TimeScale); err != nil {
			return nil, err
		}
	}
	res, err := Run(ctx, bc)
	if err != nil {
		return nil, err
	}
	out.Policies = policyFigures(res.Report, res.Samples)
	out.RateRPS, out.LoadAvg = res.RateRPS, res.LoadAvg
	return out, nil
}
