// Package devstack runs Switchyard's local multi-region stack on one machine: per cluster a fleet
// of simulated GPU servers (modelsim) behind a cluster-gateway, and per region a global-router,
// each a real process built from this repository, supervised until the context ends.
package devstack

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is the stack's layout, read from deploy/local/devstack.yaml.
type Config struct {
	// Model is the base model every simulated server serves.
	Model string `yaml:"model"`
	// Adapters are LoRA adapters every simulated server can load.
	Adapters []string `yaml:"adapters"`
	// MaxLoras is the adapter slots per simulated server.
	MaxLoras int `yaml:"maxLoras"`
	// TimeScale multiplies every simulated duration (1 = real time).
	TimeScale float64 `yaml:"timeScale"`
	// Profile is the cluster-gateway scheduling profile (default, gie-default, round-robin, ...).
	Profile string `yaml:"profile"`
	// Regions of the stack.
	Regions []Region `yaml:"regions"`
	// Latency is the simulated round trip between regions.
	Latency []Link `yaml:"latency"`
}

// Region is one region: a router and its clusters.
type Region struct {
	Name     string    `yaml:"name"`
	Router   Router    `yaml:"router"`
	Clusters []Cluster `yaml:"clusters"`
}

// Router holds the fixed addresses of a region's router.
type Router struct {
	// Listen is the OpenAI endpoint (e.g. 127.0.0.1:8080).
	Listen string `yaml:"listen"`
	// Admin is the admin API (e.g. 127.0.0.1:9090).
	Admin string `yaml:"admin"`
}

// Cluster is one cluster: a gateway over a fleet of simulated pods.
type Cluster struct {
	Name string    `yaml:"name"`
	Pods []PodSpec `yaml:"pods"`
}

// PodSpec is Count simulated pods of one GPU profile.
type PodSpec struct {
	Profile string `yaml:"profile"`
	Count   int    `yaml:"count"`
}

// Link is a simulated round trip between two regions.
type Link struct {
	Between []string      `yaml:"between"`
	RTT     time.Duration `yaml:"rtt"`
}

// LoadConfig reads and validates a stack file; unknown fields are an error.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("devstack config: %w", err)
	}
	return ParseConfig(b)
}

// ParseConfig decodes and validates a stack file; unknown fields are an error.
func ParseConfig(b []byte) (*Config, error) {
	cfg := Config{TimeScale: 1, Profile: "default"}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("devstack config: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("devstack config: %w", err)
	}
	return &cfg, nil
}

// Validate reports the first invalid field by name.
func (c *Config) Validate() error {
	if c.Model == "" {
		return errors.New("model: must be set")
	}
	if !(c.TimeScale > 0) {
		return fmt.Errorf("timeScale: %v must be > 0", c.TimeScale)
	}
	if len(c.Regions) == 0 {
		return errors.New("regions: at least one region is needed")
	}
	names := map[string]bool{}
	for i, r := range c.Regions {
		if err := r.validate(names); err != nil {
			return fmt.Errorf("regions[%d]: %w", i, err)
		}
	}
	for i, l := range c.Latency {
		if len(l.Between) != 2 || !names["region/"+l.Between[0]] || !names["region/"+l.Between[1]] {
			return fmt.Errorf("latency[%d].between: must name two regions of the stack", i)
		}
		if l.RTT < 0 {
			return fmt.Errorf("latency[%d].rtt: must be >= 0", i)
		}
	}
	return nil
}

func (r *Region) validate(names map[string]bool) error {
	if r.Name == "" || names["region/"+r.Name] {
		return fmt.Errorf("name: %q is empty or repeated", r.Name)
	}
	names["region/"+r.Name] = true
	for field, addr := range map[string]string{"router.listen": r.Router.Listen, "router.admin": r.Router.Admin} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
	}
	if len(r.Clusters) == 0 {
		return errors.New("clusters: at least one cluster is needed")
	}
	for i, c := range r.Clusters {
		if c.Name == "" || names["cluster/"+c.Name] {
			return fmt.Errorf("clusters[%d].name: %q is empty or repeated", i, c.Name)
		}
		names["cluster/"+c.Name] = true
		if len(c.Pods) == 0 {
			return fmt.Errorf("clusters[%d].pods: at least one pod is needed", i)
		}
		for j, p := range c.Pods {
			if p.Profile == "" || p.Count < 1 {
				return fmt.Errorf("clusters[%d].pods[%d]: profile must be set and count >= 1", i, j)
			}
		}
	}
	return nil
}

// RTT returns the configured round trip between two regions (0 within a region or when unset).
func (c *Config) RTT(a, b string) time.Duration {
	for _, l := range c.Latency {
		if (l.Between[0] == a && l.Between[1] == b) || (l.Between[0] == b && l.Between[1] == a) {
			return l.RTT
		}
	}
	return 0
}
