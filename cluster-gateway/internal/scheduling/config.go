// Package scheduling is the gateway's endpoint picker: for each request it runs the configured
// profile's filters, weighted scorers and picker over the endpoint store and returns the target
// and ordered fallbacks. Profiles are built-in (default, gie-default and the baselines) or come
// from a GIE EndpointPickerConfig file.
package scheduling

import (
	"cmp"
	"embed"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Built-in profile names.
const (
	ProfileDefault      = "default"
	ProfileGIEDefault   = "gie-default"
	ProfileRoundRobin   = "round-robin"
	ProfileLeastRequest = "least-request"
	ProfileRandom       = "random"
	// ProfileGIELoRA is GIE's scorers with LoRA affinity (queue, kv, prefix, lora-affinity).
	ProfileGIELoRA = "gie-lora"
	// ProfileWeightedRoundRobin, ProfileP2C and ProfileLeastConn are the weighted baselines:
	// capacity-weighted round robin, Envoy's LEAST_REQUEST and HAProxy's leastconn.
	ProfileWeightedRoundRobin = "weighted-round-robin"
	ProfileP2C                = "p2c"
	ProfileLeastConn          = "leastconn"
	// ProfilePD disaggregates prefill from decode (llm-d's pd-profile-handler) over pods labelled
	// with their llm-d.ai/role.
	ProfilePD = "pd"
)

// baselines behave like a plain Kubernetes Service: no saturation filter, no flow control.
var baselines = []string{ProfileRoundRobin, ProfileLeastRequest, ProfileRandom,
	ProfileWeightedRoundRobin, ProfileP2C, ProfileLeastConn}

// Profiles lists the built-in profile names.
func Profiles() []string {
	return []string{ProfileDefault, ProfileGIEDefault, ProfileGIELoRA, ProfileRoundRobin, ProfileLeastRequest,
		ProfileRandom, ProfileWeightedRoundRobin, ProfileP2C, ProfileLeastConn, ProfilePD}
}

//go:embed profiles/*.yaml
var profileFS embed.FS

// ProfileYAML returns the EndpointPickerConfig of a built-in profile.
func ProfileYAML(name string) ([]byte, error) {
	if !slices.Contains(Profiles(), name) {
		return nil, fmt.Errorf("unknown profile %q (built-in: %v)", name, Profiles())
	}
	return profileFS.ReadFile("profiles/" + name + ".yaml")
}

// Config selects the scheduling profile.
type Config struct {
	// Profile names a built-in profile (Profiles: default, gie-default, gie-lora and the
	// baselines). It is used when ConfigFile is empty. Default "default".
	Profile string
	// ConfigFile is a GIE EndpointPickerConfig file; when set it replaces Profile.
	ConfigFile string
	// ConfigText is a GIE EndpointPickerConfig given inline (GIE's --config-text); when set it
	// replaces Profile. At most one of ConfigFile and ConfigText may be set.
	ConfigText string
	// Services are the gateway-wide services plugin factories may look up by name
	// (framework.Services); nil offers none.
	Services map[string]any
	// Now is the clock used for staleness, ejection and learning (time.Now when nil); tests
	// inject a virtual clock.
	Now func() time.Time
}

// DefaultConfig returns the shipped default profile and the wall clock.
func DefaultConfig() Config {
	return Config{Profile: ProfileDefault, Now: time.Now}
}

// Validate returns an error naming the invalid field.
func (c Config) Validate() error {
	switch {
	case c.ConfigFile != "" && c.ConfigText != "":
		return errors.New("scheduling: ConfigFile and ConfigText are exclusive")
	case c.ConfigFile == "" && c.ConfigText == "" && !slices.Contains(Profiles(), c.Profile):
		return fmt.Errorf("scheduling: Profile %q is not a built-in profile %v (or set ConfigFile)", c.Profile, Profiles())
	}
	return nil
}

// configTextName names an inline configuration in the scheduler's metrics, where a file is
// named by its path.
const configTextName = "config-text"

// name is how the scheduler's metrics name the selected configuration.
func (c Config) name() string {
	if c.ConfigText != "" {
		return configTextName
	}
	return cmp.Or(c.ConfigFile, c.Profile)
}

// load parses the selected profile and tells whether it is a baseline.
func (c Config) load() (*framework.EndpointPickerConfig, bool, error) {
	if c.ConfigFile != "" {
		pc, err := framework.LoadConfigFile(c.ConfigFile)
		return pc, false, err
	}
	if c.ConfigText != "" {
		pc, err := framework.ParseConfig([]byte(c.ConfigText))
		if err != nil {
			return nil, false, fmt.Errorf("config text: %w", err)
		}
		return pc, false, nil
	}
	data, err := ProfileYAML(c.Profile)
	if err != nil {
		return nil, false, err
	}
	pc, err := framework.ParseConfig(data)
	if err != nil {
		return nil, false, fmt.Errorf("built-in profile %s: %w", c.Profile, err)
	}
	return pc, slices.Contains(baselines, c.Profile), nil
}
