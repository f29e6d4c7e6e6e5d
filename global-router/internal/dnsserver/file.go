package dnsserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"time"

	"sigs.k8s.io/yaml"
)

// fileConfig is the YAML (or JSON) form of Config read by LoadConfig; unknown fields are errors.
type fileConfig struct {
	Zone            string                         `json:"zone"`
	Name            string                         `json:"name"`
	TTL             *duration                      `json:"ttl"`
	DefaultRegion   string                         `json:"defaultRegion"`
	UseClientSubnet *bool                          `json:"useClientSubnet"`
	Regions         map[string]Region              `json:"regions"`
	ClientRegions   map[netip.Prefix]string        `json:"clientRegions"`
	RTT             map[string]map[string]duration `json:"rtt"`
}

// Region's file form: {ipv4: [..], ipv6: [..]}.
func (r *Region) UnmarshalJSON(b []byte) error {
	var f struct {
		IPv4 []netip.Addr `json:"ipv4"`
		IPv6 []netip.Addr `json:"ipv6"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return err
	}
	r.IPv4, r.IPv6 = f.IPv4, f.IPv6
	return nil
}

// duration decodes a Go duration string such as "5s" or "70ms".
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration %s must be a string such as \"5s\"", b)
	}
	v, err := time.ParseDuration(s)
	*d = duration(v)
	return err
}

// LoadConfig reads a responder configuration file (YAML or JSON) over DefaultConfig and
// validates it. Listen is not in the file: it comes from --dns-listen.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("dnsserver: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig parses a responder configuration (YAML or JSON) over DefaultConfig and validates it.
func ParseConfig(data []byte) (Config, error) {
	var f fileConfig
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	cfg := DefaultConfig()
	cfg.Zone, cfg.Name, cfg.DefaultRegion, cfg.Regions, cfg.ClientRegions =
		f.Zone, f.Name, f.DefaultRegion, f.Regions, f.ClientRegions
	if f.TTL != nil {
		cfg.TTL = time.Duration(*f.TTL)
	}
	if f.UseClientSubnet != nil {
		cfg.UseClientSubnet = *f.UseClientSubnet
	}
	cfg.RTT = map[string]map[string]time.Duration{}
	for from, m := range f.RTT {
		cfg.RTT[from] = map[string]time.Duration{}
		for to, d := range m {
			cfg.RTT[from][to] = time.Duration(d)
		}
	}
	return cfg, cfg.Validate()
}
