package dnssync

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"
)

// fileConfig is the YAML (or JSON) form read by LoadConfig; unknown fields are errors.
type fileConfig struct {
	HostedZoneID  string                `json:"hostedZoneID"`
	RecordName    string                `json:"recordName"`
	RecordType    string                `json:"recordType"`
	TTL           *duration             `json:"ttl"`
	Period        *duration             `json:"period"`
	Endpoint      string                `json:"endpoint"`
	SigningRegion string                `json:"signingRegion"`
	MaxAttempts   int                   `json:"maxAttempts"`
	Regions       map[string]fileTarget `json:"regions"`
}

type fileTarget struct {
	AWSRegion            string   `json:"awsRegion"`
	Values               []string `json:"values"`
	AliasDNSName         string   `json:"aliasDNSName"`
	AliasHostedZoneID    string   `json:"aliasHostedZoneID"`
	EvaluateTargetHealth bool     `json:"evaluateTargetHealth"`
	HealthCheckID        string   `json:"healthCheckID"`
}

// duration decodes a Go duration string such as "60s".
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration %s must be a string such as \"60s\"", b)
	}
	v, err := time.ParseDuration(s)
	*d = duration(v)
	return err
}

// LoadConfig reads a DNS-sync configuration file (YAML or JSON): the Config over DefaultConfig,
// validated, and the Route 53 client settings.
func LoadConfig(path string) (Config, ClientConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, ClientConfig{}, fmt.Errorf("dnssync: %w", err)
	}
	cfg, cc, err := ParseConfig(data)
	if err != nil {
		return Config{}, ClientConfig{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, cc, nil
}

// ParseConfig parses a DNS-sync configuration (YAML or JSON); see LoadConfig.
func ParseConfig(data []byte) (Config, ClientConfig, error) {
	var f fileConfig
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return Config{}, ClientConfig{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	cfg := DefaultConfig()
	cfg.HostedZoneID, cfg.RecordName = f.HostedZoneID, f.RecordName
	if f.RecordType != "" {
		cfg.RecordType = f.RecordType
	}
	if f.TTL != nil {
		cfg.TTL = time.Duration(*f.TTL)
	}
	if f.Period != nil {
		cfg.Period = time.Duration(*f.Period)
	}
	cfg.Targets = make(map[string]Target, len(f.Regions))
	for r, t := range f.Regions {
		cfg.Targets[r] = Target(t)
	}
	cc := ClientConfig{Endpoint: f.Endpoint, SigningRegion: f.SigningRegion, MaxAttempts: f.MaxAttempts}
	if cc.MaxAttempts < 0 {
		return cfg, cc, fmt.Errorf("%w: maxAttempts %d is negative", ErrInvalid, cc.MaxAttempts)
	}
	return cfg, cc, cfg.Validate()
}
