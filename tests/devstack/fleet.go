package devstack

import (
	"fmt"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

// fleetEntry is one simulated server in a modelsim fleet file (same names as modelsim's flags).
type fleetEntry struct {
	Listen    string   `yaml:"listen"`
	Profile   string   `yaml:"profile"`
	Model     string   `yaml:"model"`
	LoRA      []string `yaml:"lora,omitempty"`
	MaxLoras  int      `yaml:"max-loras"`
	TimeScale float64  `yaml:"time-scale"`
	Seed      uint64   `yaml:"seed"`
}

// writeFleet writes the modelsim fleet file of cluster c, with a free port per pod, and returns
// its path and the pods' addresses.
func (s *Stack) writeFleet(c Cluster) (string, []string, error) {
	var (
		entries []fleetEntry
		pods    []string
	)
	seed := uint64(1)
	for _, ps := range c.Pods {
		for range ps.Count {
			addr, err := harness.FreePort()
			if err != nil {
				return "", nil, fmt.Errorf("fleet %s: %w", c.Name, err)
			}
			entries = append(entries, fleetEntry{
				Listen: addr, Profile: ps.Profile, Model: s.cfg.Model, LoRA: s.cfg.Adapters,
				MaxLoras: s.cfg.MaxLoras, TimeScale: s.cfg.TimeScale, Seed: seed,
			})
			pods = append(pods, addr)
			seed++
		}
	}
	b, err := yaml.Marshal(entries)
	if err != nil {
		return "", nil, fmt.Errorf("fleet %s: %w", c.Name, err)
	}
	path := filepath.Join(s.opt.DataDir, "fleet-"+c.Name+".yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return "", nil, fmt.Errorf("fleet %s: %w", c.Name, err)
	}
	return path, pods, nil
}
