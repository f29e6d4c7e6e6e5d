package gossip_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
)

func TestMetadataThroughMembers(t *testing.T) {
	p := gossiptest.Start(t, 2, func(i int, c *gossip.Config) {
		if i == 1 {
			c.Role, c.Cluster, c.Region, c.Version = gossip.RoleRouter, "", "eu-west-1", "1.2.3"
		}
	})
	formed(t, p)
	want := map[string]gossip.Metadata{
		"node-00": {Role: gossip.RoleGateway, Cluster: "c00", Region: "r1", URL: "http://node-00.test:8080", Version: "dev"},
		"node-01": {Role: gossip.RoleRouter, Region: "eu-west-1", URL: "http://node-01.test:8080", Version: "1.2.3"},
	}
	for _, m := range p.Node(0).Members() {
		if m.Meta != want[m.Name] || m.MetaErr != nil || m.State != gossip.StateAlive || m.Addr == "" {
			t.Errorf("member %+v, want meta %+v", m, want[m.Name])
		}
	}
}

func TestDecodeMetadataRejects(t *testing.T) {
	long := make([]byte, 600)
	long[0], long[1] = 1, 1
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"version zero", []byte{0, 1, 0, 0, 0, 0}},
		{"unknown role", []byte{1, 9, 0, 0, 0, 0}},
		{"truncated", []byte{1, 1, 5, 'a'}},
		{"trailing bytes", []byte{1, 1, 0, 0, 0, 0, 7}},
		{"version 2 without the feature byte", []byte{2, 1, 0, 0, 0, 0}},
		{"version 2 with bytes after the feature byte", []byte{2, 1, 0, 0, 0, 0, 1, 7}},
		{"not UTF-8", []byte{1, 1, 1, 0xff, 0, 0, 0}},
		{"over 512 bytes", long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := gossip.DecodeMetadata(tt.b); !errors.Is(err, gossip.ErrInvalidMetadata) {
				t.Fatalf("err = %v, want ErrInvalidMetadata", err)
			}
		})
	}
	// A newer version may append fields after the version-1 ones.
	m, err := gossip.DecodeMetadata([]byte{2, 2, 0, 2, 'e', 'u', 0, 0, 42})
	if err != nil || m.Role != gossip.RoleRouter || m.Region != "eu" {
		t.Errorf("newer version: %+v %v", m, err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(c *gossip.Config)
		field  string
	}{
		{"valid", func(c *gossip.Config) {}, ""},
		{"no name", func(c *gossip.Config) { c.NodeName = "" }, "NodeName"},
		{"bad role", func(c *gossip.Config) { c.Role = "boss" }, "Role"},
		{"gateway without cluster", func(c *gossip.Config) { c.Cluster = "" }, "Cluster"},
		{"relative URL", func(c *gossip.Config) { c.AdvertiseURL = "/v1" }, "AdvertiseURL"},
		{"no region", func(c *gossip.Config) { c.Region = "" }, "Region"},
		{"no keys", func(c *gossip.Config) { c.Keys = nil }, "Keys"},
		{"short key", func(c *gossip.Config) { c.Keys = [][]byte{[]byte("short")} }, "Keys[0]"},
		{"zero TTL", func(c *gossip.Config) { c.SummaryTTL = 0 }, "SummaryTTL"},
		{"zero gossip interval", func(c *gossip.Config) { c.Timings.GossipInterval = 0 }, "GossipInterval"},
		{"metadata too long", func(c *gossip.Config) { c.Version = strings.Repeat("v", 300) }, "metadata"},
		{"bad port", func(c *gossip.Config) { c.BindPort = 70000 }, "BindPort"},
		{"budget off", func(c *gossip.Config) { c.BroadcastBudget = 0 }, ""},
		{"negative budget", func(c *gossip.Config) { c.BroadcastBudget = -1 }, "BroadcastBudget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := gossiptest.Config(1)
			tt.modify(&c)
			err := c.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("err = %v, want one naming %s", err, tt.field)
			}
		})
	}
	if c := gossip.DefaultWANConfig(); c.Timings.ProbeInterval <= gossip.DefaultLANConfig().Timings.ProbeInterval {
		t.Error("WAN profile probes no less often than LAN")
	}
}

func FuzzDecodeMetadata(f *testing.F) {
	f.Add([]byte{1, 1, 2, 'c', '1', 2, 'r', '1', 0, 3, 'd', 'e', 'v'})
	f.Add([]byte{2, 2, 0, 0, 0, 0, 9, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := gossip.DecodeMetadata(b)
		if err != nil {
			return
		}
		if m.Role != gossip.RoleGateway && m.Role != gossip.RoleRouter {
			t.Fatalf("decoded role %q", m.Role)
		}
	})
}
