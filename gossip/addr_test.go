package gossip_test

import (
	"testing"

	"github.com/switchyard-dev/switchyard/gossip"
)

func TestParseAddr(t *testing.T) {
	tests := []struct {
		in       string
		host     string
		port     int
		wantFail bool
	}{
		{"127.0.0.1:7946", "127.0.0.1", 7946, false},
		{":7946", "0.0.0.0", 7946, false},
		{"[::1]:0", "::1", 0, false},
		{"127.0.0.1", "", 0, true},
		{"127.0.0.1:gossip", "", 0, true},
		{"127.0.0.1:70000", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			host, port, err := gossip.ParseAddr(tt.in)
			if (err != nil) != tt.wantFail || host != tt.host || port != tt.port {
				t.Fatalf("ParseAddr(%q) = %q, %d, %v", tt.in, host, port, err)
			}
		})
	}
}
