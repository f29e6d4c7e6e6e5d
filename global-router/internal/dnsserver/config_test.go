package dnsserver_test

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/dnsserver"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*dnsserver.Config)
		valid bool
	}{
		{"local stack", func(*dnsserver.Config) {}, true},
		{"explicit name", func(c *dnsserver.Config) { c.Name = "llm.switchyard.test." }, true},
		{"bad listen", func(c *dnsserver.Config) { c.Listen = "5353" }, false},
		{"no zone", func(c *dnsserver.Config) { c.Zone = "" }, false},
		{"name outside zone", func(c *dnsserver.Config) { c.Name = "api.example.com" }, false},
		{"short ttl", func(c *dnsserver.Config) { c.TTL = 0 }, false},
		{"no regions", func(c *dnsserver.Config) { c.Regions = nil }, false},
		{"unknown default", func(c *dnsserver.Config) { c.DefaultRegion = "ap-south-1" }, false},
		{"region without IPv4", func(c *dnsserver.Config) {
			c.Regions["x"] = dnsserver.Region{IPv6: addrs("fd00::9")}
		}, false},
		{"IPv6 in IPv4", func(c *dnsserver.Config) { c.Regions["x"] = dnsserver.Region{IPv4: addrs("fd00::9")} }, false},
		{"IPv4 in IPv6", func(c *dnsserver.Config) {
			c.Regions["x"] = dnsserver.Region{IPv4: addrs("127.0.0.9"), IPv6: addrs("127.0.0.9")}
		}, false},
		{"client network to unknown region", func(c *dnsserver.Config) {
			c.ClientRegions[netip.MustParsePrefix("10.0.0.0/8")] = "nowhere"
		}, false},
		{"rtt to unknown region", func(c *dnsserver.Config) { c.RTT["us-east-1"]["nowhere"] = time.Millisecond }, false},
		{"negative rtt", func(c *dnsserver.Config) { c.RTT["us-east-1"]["eu-west-1"] = -time.Millisecond }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := localStack()
			tt.edit(&cfg)
			err := cfg.Validate()
			if (err == nil) != tt.valid || (err != nil && !errors.Is(err, dnsserver.ErrInvalid)) {
				t.Fatalf("Validate = %v, want valid=%v", err, tt.valid)
			}
		})
	}
}
