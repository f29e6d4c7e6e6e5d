package proxy_test

import (
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/proxy"
)

func TestIsRoutingHeader(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"X-Gateway-Destination-Endpoint", true},
		{"x-gateway-model-name", true},
		{"X-SWITCHYARD-TENANT", true},
		{"X-Switchyard-", true},
		{"X-Gateway", false},
		{"X-Gatewayx-", false},
		{"Content-Type", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := proxy.IsRoutingHeader(tt.name); got != tt.want {
				t.Fatalf("IsRoutingHeader(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}
