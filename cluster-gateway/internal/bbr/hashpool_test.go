package bbr

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
)

func TestHashPoolClasses(t *testing.T) {
	tests := []struct {
		n, wantCap int
		pooled     bool
	}{
		{0, 0, false},
		{1, 64, true},
		{64, 64, true},
		{65, 128, true},
		{1600, 2048, true},
		{1 << 16, 1 << 16, true},
		{1<<16 + 1, 1<<16 + 1, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			p := &hashPool{poison: true}
			s := p.get(tt.n)
			if len(s) != 0 || cap(s) != tt.wantCap {
				t.Fatalf("get(%d): len %d cap %d, want 0 and %d", tt.n, len(s), cap(s), tt.wantCap)
			}
			s = append(s, make([]uint64, tt.n)...)
			p.put(s)
			if poisoned := tt.n > 0 && s[0] == PoisonHash && s[tt.n-1] == PoisonHash; poisoned != tt.pooled {
				t.Fatalf("put of cap %d: poisoned %v, want %v", cap(s), poisoned, tt.pooled)
			}
		})
	}
}

func TestHashPoolIgnoresForeignSlices(t *testing.T) {
	p := &hashPool{poison: true}
	tests := []struct {
		name string
		s    []uint64
	}{
		{"odd capacity", make([]uint64, 100)},
		{"resliced from the front", make([]uint64, 128)[1:]},
		{"below the smallest class", make([]uint64, 32)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.put(tt.s)
			if tt.s[0] == PoisonHash {
				t.Fatal("a slice of no class was taken")
			}
		})
	}
}

// TestReleasePoisonsHashes checks Route's hashes and that Release hands them back: the
// request forgets them and a poisoning router overwrites them, so a reader that kept the
// slice sees PoisonHash.
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
				if h != PoisonHash {
					t.Fatalf("hash %d = %#x after Release, want poison", i, h)
				}
			}
		})
	}
}
