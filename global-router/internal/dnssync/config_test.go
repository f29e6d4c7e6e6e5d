package dnssync_test

import (
	"errors"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/dnssync"
)

func TestConfigValidate(t *testing.T) {
	alias := dnssync.Target{AliasDNSName: "lb.example.net", AliasHostedZoneID: "Z1"}
	tests := []struct {
		name  string
		edit  func(*dnssync.Config)
		valid bool
	}{
		{"test config", func(*dnssync.Config) {}, true},
		{"no zone", func(c *dnssync.Config) { c.HostedZoneID = "/hostedzone/" }, false},
		{"no name", func(c *dnssync.Config) { c.RecordName = "." }, false},
		{"bad type", func(c *dnssync.Config) { c.RecordType = "MX" }, false},
		{"fractional ttl", func(c *dnssync.Config) { c.TTL = 1500 * time.Millisecond }, false},
		{"no targets", func(c *dnssync.Config) { c.Targets = nil }, false},
		{"no period", func(c *dnssync.Config) { c.Period = 0 }, false},
		{"retry max under min", func(c *dnssync.Config) { c.RetryMax = c.RetryMin / 2 }, false},
		{"empty region", func(c *dnssync.Config) { c.Targets[""] = alias }, false},
		{"alias without zone", func(c *dnssync.Config) { c.Targets["x"] = dnssync.Target{AliasDNSName: "lb"} }, false},
		{"alias and values", func(c *dnssync.Config) {
			c.Targets["x"] = dnssync.Target{AliasDNSName: "lb", AliasHostedZoneID: "Z", Values: []string{"192.0.2.1"}}
		}, false},
		{"no values", func(c *dnssync.Config) { c.Targets["x"] = dnssync.Target{} }, false},
		{"ipv6 in A", func(c *dnssync.Config) { c.Targets["x"] = dnssync.Target{Values: []string{"2001:db8::1"}} }, false},
		{"AAAA", func(c *dnssync.Config) {
			c.RecordType = dnssync.TypeAAAA
			c.Targets = map[string]dnssync.Target{"x": {Values: []string{"2001:db8::1"}}, "y": alias}
		}, true},
		{"CNAME", func(c *dnssync.Config) {
			c.RecordType = dnssync.TypeCNAME
			c.Targets = map[string]dnssync.Target{"x": {Values: []string{"lb.example.net"}}}
		}, true},
		{"CNAME alias", func(c *dnssync.Config) {
			c.RecordType = dnssync.TypeCNAME
			c.Targets = map[string]dnssync.Target{"x": alias}
		}, false},
		{"CNAME two values", func(c *dnssync.Config) {
			c.RecordType = dnssync.TypeCNAME
			c.Targets = map[string]dnssync.Target{"x": {Values: []string{"a.example", "b.example"}}}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.edit(&cfg)
			err := cfg.Validate()
			if (err == nil) != tt.valid || (err != nil && !errors.Is(err, dnssync.ErrInvalid)) {
				t.Fatalf("Validate = %v, want valid=%v", err, tt.valid)
			}
		})
	}
}
