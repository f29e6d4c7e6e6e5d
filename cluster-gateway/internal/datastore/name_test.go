package datastore_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
)

var opaque = regexp.MustCompile(`^pod-[0-9a-f]{8}$`)

// An endpoint without a name gets an opaque one: stable for its address, different for another
// address, and never showing the address.
func TestOpaqueName(t *testing.T) {
	addrs := []string{"10.0.0.1:8000", "10.0.0.1:8001", "10.0.0.2:8000", "[fd00::1]:8000", "vllm-0.vllm:8000"}
	seen := map[string]string{}
	for _, a := range addrs {
		n := datastore.OpaqueName(a)
		if !opaque.MatchString(n) || strings.Contains(n, a) {
			t.Errorf("OpaqueName(%q) = %q, want pod- and 8 hex digits", a, n)
		}
		if n != datastore.OpaqueName(a) {
			t.Errorf("OpaqueName(%q) is not stable", a)
		}
		if other, dup := seen[n]; dup {
			t.Errorf("%q and %q share the name %q", a, other, n)
		}
		seen[n] = a
	}
	tests := []struct{ name, address, want string }{
		{"named", "10.0.0.1:8000", "vllm-7f9c-0"},
		{"unnamed", "10.0.0.1:8000", datastore.OpaqueName("10.0.0.1:8000")},
	}
	for _, tt := range tests {
		name := tt.want
		if tt.name == "unnamed" {
			name = ""
		}
		if got := datastore.NewEndpoint(tt.address, name, "", nil).Name; got != tt.want {
			t.Errorf("%s endpoint: name %q, want %q", tt.name, got, tt.want)
		}
	}
}
