package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

// SensitivityConfig is the default profile's weight-sensitivity table: each weighted plugin of
// the profile's first scheduling profile with its weight multiplied by each factor, one weight
// at a time, on tuning seeds (TuningSeeds), every variant run side by side with the unchanged
// profile. Each gateway takes its variant as a GIE EndpointPickerConfig file (--config).
type SensitivityConfig struct {
	// Enabled adds the table to the sweep.
	Enabled bool
	// Scenario and Load are where the weights are probed.
	Scenario string
	Load     float64
	// Seeds is how many tuning seeds each variant runs.
	Seeds int
	// Factors multiply one weight at a time.
	Factors []float64
	// Profile is the EndpointPickerConfig file probed ("" = the shipped default profile's file
	// in this workspace, ProfileFile).
	Profile string
	// GroupSize is how many variants share one run with the unchanged profile (five gateways a
	// run, as the sweep's cells).
	GroupSize int
}

// ProfileFile is the shipped default profile's file, relative to the workspace root.
const ProfileFile = "cluster-gateway/internal/scheduling/profiles/default.yaml"

// SensitivityReference names the unchanged profile's policy in the table's runs.
const SensitivityReference = "default"

// DefaultSensitivityConfig returns the table's settings: mixed-fleet at load 0.7, weights
// halved and doubled, three tuning seeds.
func DefaultSensitivityConfig() SensitivityConfig {
	return SensitivityConfig{
		Enabled:   true,
		Scenario:  "mixed-fleet",     // heterogeneous pods: where the weights matter most
		Load:      0.7,               // the load the scenarios' targets are set at
		Seeds:     3,                 // tuning seeds 1..3
		Factors:   []float64{0.5, 2}, // one weight at a time
		Profile:   "",                // the shipped default.yaml
		GroupSize: 4,                 // four variants + the unchanged profile per run
	}
}

func (c *SensitivityConfig) validate() error {
	sc, err := Lookup(c.Scenario)
	switch {
	case err != nil:
		return fmt.Errorf("bench: sensitivity: %w", err)
	case sc.Regional() || isTraceWorkload(sc.Workload):
		return fmt.Errorf("bench: sensitivity: scenario %s: a Tier 1 scenario with a load is required", c.Scenario)
	case !(c.Load > 0) || c.Load > maxLoad:
		return fmt.Errorf("bench: sensitivity: load: %v must be in (0, %g]", c.Load, maxLoad)
	case len(c.Factors) == 0:
		return errors.New("bench: sensitivity: factors: at least one required")
	case c.GroupSize < 1:
		return fmt.Errorf("bench: sensitivity: group size: must be >= 1, got %d", c.GroupSize)
	}
	for _, f := range c.Factors {
		if !(f > 0) || f == 1 {
			return fmt.Errorf("bench: sensitivity: factor %v: must be > 0 and not 1", f)
		}
	}
	return checkSeedCount("sensitivity: seeds", c.Seeds)
}

// Weight is one weighted plugin of a scheduling profile.
type Weight struct {
	// Plugin is the pluginRef; Value its weight.
	Plugin string
	Value  float64
}

// Variant is the profile with one weight multiplied by Factor.
type Variant struct {
	// Name is the variant's policy name, e.g. "prefix-cache-scorer-x0.5".
	Name   string
	Weight Weight
	Factor float64
	// YAML is the variant's EndpointPickerConfig.
	YAML []byte
}

// ProfileVariants returns every one-weight-at-a-time variant of the EndpointPickerConfig src:
// for each weighted plugin of its first scheduling profile (in order), for each factor. The
// rest of the file, comments included, is kept.
func ProfileVariants(src []byte, factors []float64) ([]Weight, []Variant, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, nil, fmt.Errorf("bench: profile: %w", err)
	}
	weights, nodes, err := profileWeights(&doc)
	if err != nil {
		return nil, nil, err
	}
	var out []Variant
	for i, w := range weights {
		for _, f := range factors {
			old, tag := nodes[i].Value, nodes[i].Tag
			// A weight written "1" is tagged !!int, which a halved weight no longer is.
			nodes[i].Value, nodes[i].Tag = strconv.FormatFloat(w.Value*f, 'g', -1, 64), "!!float"
			b, err := yaml.Marshal(&doc)
			nodes[i].Value, nodes[i].Tag = old, tag
			if err != nil {
				return nil, nil, fmt.Errorf("bench: profile: %w", err)
			}
			out = append(out, Variant{Name: fmt.Sprintf("%s-x%g", w.Plugin, f), Weight: w, Factor: f, YAML: b})
		}
	}
	return weights, out, nil
}

// profileWeights finds the weight scalars of the first scheduling profile's plugins.
func profileWeights(doc *yaml.Node) ([]Weight, []*yaml.Node, error) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil, errors.New("bench: profile: empty document")
	}
	profiles := mapValue(doc.Content[0], "schedulingProfiles")
	if profiles == nil || profiles.Kind != yaml.SequenceNode || len(profiles.Content) == 0 {
		return nil, nil, errors.New("bench: profile: no schedulingProfiles")
	}
	plugins := mapValue(profiles.Content[0], "plugins")
	if plugins == nil || plugins.Kind != yaml.SequenceNode {
		return nil, nil, errors.New("bench: profile: schedulingProfiles[0]: no plugins")
	}
	var weights []Weight
	var nodes []*yaml.Node
	for i, p := range plugins.Content {
		ref, w := mapValue(p, "pluginRef"), mapValue(p, "weight")
		if ref == nil || w == nil {
			continue
		}
		v, err := strconv.ParseFloat(w.Value, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("bench: profile: schedulingProfiles[0].plugins[%d].weight: %w", i, err)
		}
		weights = append(weights, Weight{Plugin: ref.Value, Value: v})
		nodes = append(nodes, w)
	}
	if len(weights) == 0 {
		return nil, nil, errors.New("bench: profile: schedulingProfiles[0]: no weighted plugin")
	}
	return weights, nodes, nil
}

// mapValue returns the value of key in mapping node m (nil when absent or m is no mapping).
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// sensitivityCells writes the profile's variants into Out/profiles and plans the table's runs:
// per tuning seed, the variants in groups of GroupSize, each group beside the unchanged profile.
func sensitivityCells(
	ctx context.Context,
	cfg *SweepConfig,
	capacity func(context.Context, Scenario) (float64, error),
) ([]*Cell, error) {
	s := cfg.Sensitivity
	path := s.Profile
	if path == "" {
		root, err := harness.WorkspaceRoot()
		if err != nil {
			return nil, fmt.Errorf("bench: sensitivity: %w", err)
		}
		path = filepath.Join(root, ProfileFile)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bench: sensitivity: %w", err)
	}
	_, variants, err := ProfileVariants(src, s.Factors)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Join(cfg.Out, "profiles"))
	if err != nil {
		return nil, fmt.Errorf("bench: sensitivity: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: sensitivity: %w", err)
	}
	files := map[string]string{SensitivityReference: filepath.Join(dir, SensitivityReference+".yaml")}
	if err := os.WriteFile(files[SensitivityReference], src, 0o644); err != nil {
		return nil, fmt.Errorf("bench: sensitivity: %w", err)
	}
	for _, v := range variants {
		files[v.Name] = filepath.Join(dir, v.Name+".yaml")
		if err := os.WriteFile(files[v.Name], v.YAML, 0o644); err != nil {
			return nil, fmt.Errorf("bench: sensitivity: %w", err)
		}
	}
	sc, err := Lookup(s.Scenario)
	if err != nil {
		return nil, err
	}
	c, err := capacity(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("bench: sensitivity: capacity of %s: %w", sc.Name, err)
	}
	var cells []*Cell
	for _, seed := range TuningSeeds(s.Seeds) {
		for g, chunk := range slices.Collect(slices.Chunk(variants, s.GroupSize)) {
			policies := []string{SensitivityReference}
			used := map[string]string{SensitivityReference: files[SensitivityReference]}
			for _, v := range chunk {
				policies = append(policies, v.Name)
				used[v.Name] = files[v.Name]
			}
			cells = append(cells, cfg.newCell("sensitivity", sc, c, s.Load, seed, policies, used, fmt.Sprintf("group-%d", g+1)))
		}
	}
	return cells, nil
}
