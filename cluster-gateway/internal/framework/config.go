package framework

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// APIVersion and Kind are the header of a GIE EndpointPickerConfig; a file must carry both as is.
const (
	APIVersion = "inference.networking.x-k8s.io/v1alpha1"
	Kind       = "EndpointPickerConfig"
)

// EndpointPickerConfig is GIE's scheduler configuration file (v1.5.0 shape). Switchyard reads the
// same file: plugins and one scheduling profile are honoured, the saturation detector is used as
// the pool-level saturation gate, and the sections that configure things this gateway does
// elsewhere (data layer, flow control, parser) are accepted and checked but otherwise ignored.
type EndpointPickerConfig struct {
	APIVersion         string                    `json:"apiVersion"`
	Kind               string                    `json:"kind"`
	FeatureGates       []string                  `json:"featureGates,omitempty"`
	Plugins            []PluginSpec              `json:"plugins"`
	SchedulingProfiles []SchedulingProfile       `json:"schedulingProfiles"`
	SaturationDetector *SaturationDetectorConfig `json:"saturationDetector,omitempty"`
	DataLayer          *DataLayerConfig          `json:"dataLayer,omitempty"`
	// FlowControl is GIE's flow-control section; Switchyard's front door has its own settings,
	// so the section is kept raw and ignored with a warning.
	FlowControl json.RawMessage `json:"flowControl,omitempty"`
	Parser      *PluginRef      `json:"parser,omitempty"`
}

// PluginSpec declares one plugin instance.
type PluginSpec struct {
	// Name is the instance name profiles refer to; it defaults to Type.
	Name string `json:"name,omitempty"`
	// Type is the registered plugin type.
	Type string `json:"type"`
	// Parameters are passed to the plugin's factory as JSON.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// SchedulingProfile is a named set of plugin references.
type SchedulingProfile struct {
	Name    string             `json:"name"`
	Plugins []SchedulingPlugin `json:"plugins"`
}

// SchedulingPlugin references a plugin instance from a profile; Weight applies to scorers
// (default 1).
type SchedulingPlugin struct {
	PluginRef string   `json:"pluginRef"`
	Weight    *float64 `json:"weight,omitempty"`
}

// SaturationDetectorConfig names the plugin that decides pool saturation.
type SaturationDetectorConfig struct {
	PluginRef string `json:"pluginRef,omitempty"`
}

// DataLayerConfig is GIE's data-layer section (metrics sources); Switchyard's scraper does this
// work, so it is validated for references and otherwise ignored.
type DataLayerConfig struct {
	Sources []DataLayerSource `json:"sources"`
}

// DataLayerSource is one GIE data source with its extractors.
type DataLayerSource struct {
	PluginRef  string      `json:"pluginRef"`
	Extractors []PluginRef `json:"extractors,omitempty"`
}

// PluginRef references a plugin instance by name.
type PluginRef struct {
	PluginRef string `json:"pluginRef"`
}

// knownFeatureGates are GIE v1.5.0's feature gates; any other is an error, as in GIE.
var knownFeatureGates = map[string]bool{"dataLayer": true, "enableLegacyMetrics": true, "flowControl": true}

// ParseConfig decodes an EndpointPickerConfig from YAML or JSON with strict field checks
// (unknown or duplicate fields are errors), fills defaults (plugin names) and validates it.
func ParseConfig(data []byte) (*EndpointPickerConfig, error) {
	var c EndpointPickerConfig
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("decode EndpointPickerConfig: %w", err)
	}
	c.applyDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// LoadConfigFile reads and parses an EndpointPickerConfig file.
func LoadConfigFile(path string) (*EndpointPickerConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scheduler config: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

func (c *EndpointPickerConfig) applyDefaults() {
	for i := range c.Plugins {
		if c.Plugins[i].Name == "" {
			c.Plugins[i].Name = c.Plugins[i].Type
		}
	}
}

// Validate checks the header, plugin names and every reference, and returns an error naming the
// offending field.
func (c *EndpointPickerConfig) Validate() error {
	if c.APIVersion != APIVersion {
		return fmt.Errorf("apiVersion: got %q, want %q", c.APIVersion, APIVersion)
	}
	if c.Kind != Kind {
		return fmt.Errorf("kind: got %q, want %q", c.Kind, Kind)
	}
	for _, g := range c.FeatureGates {
		if !knownFeatureGates[g] {
			return fmt.Errorf("featureGates: unknown feature gate %q", g)
		}
	}
	names, err := c.validatePlugins()
	if err != nil {
		return err
	}
	if err := c.validateProfiles(names); err != nil {
		return err
	}
	return c.validateRefs(names)
}

func (c *EndpointPickerConfig) validatePlugins() (map[string]bool, error) {
	if len(c.Plugins) == 0 {
		return nil, errors.New("plugins: at least one plugin is required")
	}
	names := make(map[string]bool, len(c.Plugins))
	for i, p := range c.Plugins {
		if p.Type == "" {
			return nil, fmt.Errorf("plugins[%d]: type is required", i)
		}
		name := p.Name
		if name == "" {
			name = p.Type
		}
		if names[name] {
			return nil, fmt.Errorf("plugins[%d]: duplicate plugin name %q", i, name)
		}
		names[name] = true
	}
	return names, nil
}

func (c *EndpointPickerConfig) validateProfiles(names map[string]bool) error {
	if len(c.SchedulingProfiles) > 2 {
		return fmt.Errorf("schedulingProfiles: %d profiles given; Switchyard runs one, or two (decode and "+
			"prefill) with a pd-profile-handler", len(c.SchedulingProfiles))
	}
	seen := make(map[string]bool, len(c.SchedulingProfiles))
	for i, p := range c.SchedulingProfiles {
		if p.Name == "" {
			return fmt.Errorf("schedulingProfiles[%d]: name is required", i)
		}
		if seen[p.Name] {
			return fmt.Errorf("schedulingProfiles[%d]: duplicate profile name %q", i, p.Name)
		}
		seen[p.Name] = true
		for j, ref := range p.Plugins {
			if ref.PluginRef == "" {
				return fmt.Errorf("schedulingProfiles[%s].plugins[%d]: pluginRef is required", p.Name, j)
			}
			if !names[ref.PluginRef] {
				return fmt.Errorf("schedulingProfiles[%s]: references undefined plugin %q", p.Name, ref.PluginRef)
			}
			if ref.Weight != nil && *ref.Weight < 0 {
				return fmt.Errorf("schedulingProfiles[%s].plugins[%d]: weight must be >= 0, got %g", p.Name, j, *ref.Weight)
			}
		}
	}
	return nil
}

func (c *EndpointPickerConfig) validateRefs(names map[string]bool) error {
	if sd := c.SaturationDetector; sd != nil && sd.PluginRef != "" && !names[sd.PluginRef] {
		return fmt.Errorf("saturationDetector: references undefined plugin %q", sd.PluginRef)
	}
	if c.Parser != nil && !names[c.Parser.PluginRef] {
		return fmt.Errorf("parser: references undefined plugin %q", c.Parser.PluginRef)
	}
	if c.DataLayer != nil {
		for i, s := range c.DataLayer.Sources {
			if !names[s.PluginRef] {
				return fmt.Errorf("dataLayer.sources[%d]: references undefined plugin %q", i, s.PluginRef)
			}
			for _, e := range s.Extractors {
				if !names[e.PluginRef] {
					return fmt.Errorf("dataLayer.sources[%d].extractors: references undefined plugin %q", i, e.PluginRef)
				}
			}
		}
	}
	return nil
}
