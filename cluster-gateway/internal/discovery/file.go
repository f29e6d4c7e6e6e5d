package discovery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// FileConfig configures the file source.
type FileConfig struct {
	// Path is the YAML endpoints file (--endpoints-file).
	Path string
	// PollInterval is how often the file is re-read and compared with the last content. Reading
	// (not watching inotify events) follows Kubernetes ConfigMap symlink swaps. Default 1 s.
	PollInterval time.Duration
}

// DefaultFileConfig returns the defaults; Path must still be set.
func DefaultFileConfig() FileConfig { return FileConfig{PollInterval: time.Second} }

// Validate reports the first invalid field.
func (c FileConfig) Validate() error {
	switch {
	case c.Path == "":
		return errors.New("discovery: FileConfig.Path is empty")
	case c.PollInterval <= 0:
		return errors.New("discovery: FileConfig.PollInterval must be positive")
	}
	return nil
}

// File publishes the endpoints listed in a YAML file and reloads it when its content changes.
// A file that cannot be read or parsed keeps the last good set; the error is logged and counted.
type File struct {
	cfg     FileConfig
	dst     Syncer
	logger  *slog.Logger
	metrics *sourceMetrics
	last    []byte
}

// NewFile returns a file source. logger and reg may be nil.
func NewFile(cfg FileConfig, dst Syncer, logger *slog.Logger, reg prometheus.Registerer) (*File, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &File{cfg: cfg, dst: dst, logger: logger, metrics: newSourceMetrics("file", reg)}, nil
}

// Run loads the file, then polls it until ctx ends. A first load that fails is returned as the
// error (a gateway must not start on a broken file); later failures keep the last good set.
func (f *File) Run(ctx context.Context) error {
	if _, err := f.reload(); err != nil {
		return err
	}
	t := time.NewTicker(f.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if changed, err := f.reload(); err != nil {
			f.logger.Warn("endpoints file rejected, keeping last good set", "path", f.cfg.Path, "err", err)
		} else if changed {
			f.logger.Info("endpoints file reloaded", "path", f.cfg.Path)
		}
	}
}

// reload reads the file and publishes it when its content changed.
func (f *File) reload() (changed bool, err error) {
	raw, err := os.ReadFile(f.cfg.Path)
	if err != nil {
		f.metrics.errors.Inc()
		return false, fmt.Errorf("discovery: read endpoints file: %w", err)
	}
	if f.last != nil && bytes.Equal(raw, f.last) {
		return false, nil
	}
	specs, err := ParseFile(raw)
	if err != nil {
		f.metrics.errors.Inc()
		return false, fmt.Errorf("discovery: %s: %w", f.cfg.Path, err)
	}
	f.last = raw
	f.dst.Sync(specs)
	f.metrics.syncs.Inc()
	return true, nil
}

// fileEntry is one endpoint in the file: a "host:port" string or an object.
type fileEntry struct {
	Address string            `yaml:"address"`
	Name    string            `yaml:"name"`
	Engine  string            `yaml:"engine"`
	Labels  map[string]string `yaml:"labels"`
	// Role is the endpoint's prefill/decode role, stored as its framework.RoleLabel label.
	Role string `yaml:"role"`
}

// UnmarshalYAML accepts both the short string form ("host:port" or "name=host:port") and the
// object form (unknown keys rejected).
func (e *fileEntry) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var item string
		if err := n.Decode(&item); err != nil {
			return err
		}
		e.Address = item
		if name, addr, ok := strings.Cut(item, "="); ok {
			e.Name, e.Address = strings.TrimSpace(name), strings.TrimSpace(addr)
			if e.Name == "" {
				return fmt.Errorf("line %d: %q: empty name before '='", n.Line, item)
			}
		}
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: an endpoint is a host:port string or a mapping", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k := n.Content[i]; k.Value {
		case "address", "name", "engine", "labels", "role":
		default:
			return fmt.Errorf("line %d: unknown key %q (want address, name, engine, labels, role)", k.Line, k.Value)
		}
	}
	type plain fileEntry // no UnmarshalYAML method: decodes field by field
	return n.Decode((*plain)(e))
}

// ParseFile parses an endpoints file: a YAML list whose items are either "host:port" or
// "name=host:port" strings or objects {address, name, engine, labels, role}. "[]" is a valid empty
// set, an empty file is not; bad addresses or names, unknown engines, unknown keys and repeated
// addresses or names are errors. An endpoint without a name is named datastore.OpaqueName of its
// address.
//
//   - 10.0.0.1:8000
//   - vllm-a=10.0.0.3:8000
//   - address: 10.0.0.2:8000
//     name: pod-b
//     engine: sglang
//     labels: {gpu: a10g}
//   - address: 10.0.0.4:8000
//     role: prefill
//
// role (prefill, decode, both or prefill-decode) is stored as the llm-d.ai/role label
// (framework.RoleLabel), as InferencePool pods carry it.
func ParseFile(raw []byte) ([]datastore.EndpointSpec, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		// Most likely a file caught mid-write; "[]" states an empty set explicitly.
		return nil, errors.New("file is empty (write [] for no endpoints)")
	}
	var entries []fileEntry
	if err := yaml.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("parse endpoints: %w", err)
	}
	specs := make([]datastore.EndpointSpec, 0, len(entries))
	seen := make(map[string]bool, len(entries))
	names := make(map[string]bool, len(entries))
	for i, e := range entries {
		if err := ValidateAddress(e.Address); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
		engine := datastore.Engine(e.Engine)
		if err := ValidateEngine(engine); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
		if seen[e.Address] {
			return nil, fmt.Errorf("entry %d: endpoint %q listed twice", i+1, e.Address)
		}
		if e.Name != "" {
			if err := ValidateName(e.Name); err != nil {
				return nil, fmt.Errorf("entry %d: %w", i+1, err)
			}
			if names[e.Name] {
				return nil, fmt.Errorf("entry %d: endpoint name %q given twice", i+1, e.Name)
			}
			names[e.Name] = true
		}
		labels, err := roleLabels(e)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
		seen[e.Address] = true
		if engine == "" {
			engine = datastore.EngineVLLM
		}
		specs = append(
			specs,
			datastore.EndpointSpec{Address: e.Address, Name: e.Name, Engine: engine, Labels: labels},
		)
	}
	return specs, nil
}

// roleLabels returns a copy of e's labels with its role as framework.RoleLabel. The role, in
// the role field or the label, must be a known one; the two may not disagree.
func roleLabels(e fileEntry) (map[string]string, error) {
	labels := maps.Clone(e.Labels)
	if v, ok := labels[framework.RoleLabel]; ok {
		if _, err := framework.ParseRole(v); err != nil {
			return nil, fmt.Errorf("label %s: %w", framework.RoleLabel, err)
		}
		if e.Role != "" && e.Role != v {
			return nil, fmt.Errorf("role %q disagrees with label %s=%q", e.Role, framework.RoleLabel, v)
		}
	}
	if e.Role == "" {
		return labels, nil
	}
	if _, err := framework.ParseRole(e.Role); err != nil {
		return nil, err
	}
	if labels == nil {
		labels = make(map[string]string, 1)
	}
	labels[framework.RoleLabel] = e.Role
	return labels, nil
}
