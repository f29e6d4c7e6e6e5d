package bbr

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/hashpool"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
)

// TestReleasePoisonsHashes checks Route's hashes and that Release hands them back: the
// request forgets them and a poisoning router overwrites them, so a reader that kept the
// slice sees hashpool.Poison.
func TestReleasePoisonsHashes(t *testing.T) {
	r, _ := NewRouter(DefaultConfig(), testEndpoints())
	r.PoisonReleasedHashes()
	tests := []struct {
		name   string
		prompt string
	}{
		{"shorter than a block", "hello"},
		{"five blocks", strings.Repeat("abcdefgh", 40)},
		{"1,600 blocks", strings.Repeat("lorem ipsum ", 100<<10/12)},
		{"past MaxPrefixBlocks", strings.Repeat("x", 300<<10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req framework.Request
			if _, err := r.Route(fmt.Appendf(nil, `{"model":"llama","prompt":%q}`, tt.prompt), &req); err != nil {
				t.Fatal(err)
			}
			want := prefix.Hashes(nil, "llama", []byte(tt.prompt), DefaultConfig().MaxPrefixBlocks)
			if fmt.Sprint(req.PrefixHashes) != fmt.Sprint(want) {
				t.Fatalf("%d hashes, want %d (%v)", len(req.PrefixHashes), len(want), want[:min(len(want), 3)])
			}
			kept := req.PrefixHashes
			r.Release(&req)
			if req.PrefixHashes != nil {
				t.Fatal("request keeps its hashes after Release")
			}
			for i, h := range kept {
				if h != hashpool.Poison {
					t.Fatalf("hash %d = %#x after Release, want poison", i, h)
				}
			}
		})
	}
}
