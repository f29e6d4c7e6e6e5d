// Package fleet runs many simulated model servers in one process, each on its own port, as
// described by a fleet file: a YAML list whose entries take the same settings as the modelsim
// command's flags.
//
//   - listen: 127.0.0.1:8001
//     profile: h100
//     model: meta-llama/Llama-3.1-8B-Instruct
//     lora: [sql, chat]        # or "sql,chat"
//     max-loras: 2
//   - listen: 127.0.0.1:8002
//     profile: a10g
//     model: meta-llama/Llama-3.1-8B-Instruct
//     engine: sglang
//     physics: attention       # step-time model (linear, blis, attention)
//     physics-jitter: 0.1      # lognormal σ of step-time jitter
//     report-cached-tokens: false
//     kv-events-endpoint: tcp://127.0.0.1:5557   # publish vLLM KV cache events
//     hash-seed: "42"                            # the simulated PYTHONHASHSEED
package fleet

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

// entry is one fleet file entry; unset fields keep server.DefaultConfig's values.
type entry struct {
	Listen      *string        `yaml:"listen"`
	Profile     *string        `yaml:"profile"`
	Model       *string        `yaml:"model"`
	LoRA        *adapterList   `yaml:"lora"`
	MaxLoras    *int           `yaml:"max-loras"`
	TimeScale   *float64       `yaml:"time-scale"`
	Seed        *uint64        `yaml:"seed"`
	Engine      *string        `yaml:"engine"`
	MaxModelLen *int           `yaml:"max-model-len"`
	Physics     *string        `yaml:"physics"`
	Jitter      *float64       `yaml:"physics-jitter"`
	ReportCache *bool          `yaml:"report-cached-tokens"`
	KVEvents    *string        `yaml:"kv-events-endpoint"`
	KVTopic     *string        `yaml:"kv-events-topic"`
	HashSeed    *string        `yaml:"hash-seed"`
	Role        *string        `yaml:"role"`
	KVTransfer  *time.Duration `yaml:"kv-transfer-per-token"`
}

// adapterList accepts a YAML sequence of names or one comma-separated string.
type adapterList []string

// UnmarshalYAML decodes a sequence or a comma-separated scalar.
func (a *adapterList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*a = SplitList(n.Value)
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return err
	}
	*a = list
	return nil
}

// SplitList splits a comma-separated list, trimming spaces and dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (e entry) config() server.Config {
	c := server.DefaultConfig()
	set(&c.Listen, e.Listen)
	set(&c.Profile, e.Profile)
	set(&c.Model, e.Model)
	if e.LoRA != nil {
		c.LoRAs = []string(*e.LoRA)
	}
	set(&c.MaxLoras, e.MaxLoras)
	set(&c.TimeScale, e.TimeScale)
	set(&c.Seed, e.Seed)
	set(&c.Engine, e.Engine)
	set(&c.MaxModelLen, e.MaxModelLen)
	set(&c.Physics, e.Physics)
	set(&c.PhysicsJitter, e.Jitter)
	set(&c.ReportCachedTokens, e.ReportCache)
	set(&c.KVEventsEndpoint, e.KVEvents)
	set(&c.KVEventsTopic, e.KVTopic)
	set(&c.HashSeed, e.HashSeed)
	set(&c.Role, e.Role)
	set(&c.KVTransferPerToken, e.KVTransfer)
	return c
}

func set[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

// ErrEmpty is returned for a fleet file with no servers.
var ErrEmpty = errors.New("fleet: no servers listed")

// Parse reads a fleet file and returns one validated configuration per server. Unknown keys,
// invalid values and two servers on the same fixed address are errors naming the entry.
func Parse(r io.Reader) ([]server.Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("fleet: read: %w", err)
	}
	entries, err := decode(data)
	if err != nil {
		return nil, err
	}
	cfgs := make([]server.Config, len(entries))
	seen := map[string]int{}
	for i, e := range entries {
		cfgs[i] = e.config()
		if err := cfgs[i].Validate(); err != nil {
			return nil, fmt.Errorf("fleet: entry %d: %w", i+1, err)
		}
		if _, port, _ := net.SplitHostPort(cfgs[i].Listen); port != "0" {
			if j, dup := seen[cfgs[i].Listen]; dup {
				return nil, fmt.Errorf("fleet: entries %d and %d both listen on %s", j+1, i+1, cfgs[i].Listen)
			}
			seen[cfgs[i].Listen] = i
		}
	}
	return cfgs, nil
}

// knownKeys are the keys an entry may hold.
var knownKeys = map[string]bool{"listen": true, "profile": true, "model": true, "lora": true,
	"max-loras": true, "time-scale": true, "seed": true, "engine": true, "max-model-len": true,
	"physics": true, "physics-jitter": true, "report-cached-tokens": true, "role": true, "kv-transfer-per-token": true}

// decode reads the entries: a list at the top level, or under a single "servers" key. Keys may use
// underscores for dashes (max_loras); unknown keys are errors with their line.
func decode(data []byte) ([]entry, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("fleet: parse: %w", err)
	}
	if len(root.Content) == 0 {
		return nil, ErrEmpty
	}
	list := root.Content[0]
	if list.Kind == yaml.MappingNode && len(list.Content) == 2 && list.Content[0].Value == "servers" {
		list = list.Content[1]
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("fleet: parse: line %d: want a list of servers", list.Line)
	}
	entries := make([]entry, len(list.Content))
	for i, n := range list.Content {
		if err := checkKeys(n, i+1); err != nil {
			return nil, err
		}
		if err := n.Decode(&entries[i]); err != nil {
			return nil, fmt.Errorf("fleet: parse: entry %d: %w", i+1, err)
		}
	}
	if len(entries) == 0 {
		return nil, ErrEmpty
	}
	return entries, nil
}

// checkKeys rejects an entry that is not a mapping or holds an unknown key, after spelling
// underscores as dashes.
func checkKeys(n *yaml.Node, num int) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("fleet: parse: line %d: entry %d is not a mapping", n.Line, num)
	}
	for k := 0; k < len(n.Content); k += 2 {
		key := n.Content[k]
		key.Value = strings.ReplaceAll(key.Value, "_", "-")
		if !knownKeys[key.Value] {
			return fmt.Errorf("fleet: parse: line %d: unknown key %q in entry %d", key.Line, key.Value, num)
		}
	}
	return nil
}

// Load parses the fleet file at path.
func Load(path string) ([]server.Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	defer f.Close()
	return Parse(f)
}
