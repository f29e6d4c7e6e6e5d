package hashpool

import (
	"fmt"
	"testing"
)

func TestClasses(t *testing.T) {
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
			p := &Pool{poison: true}
			s := p.Get(tt.n)
			if len(s) != 0 || cap(s) != tt.wantCap {
				t.Fatalf("Get(%d): len %d cap %d, want 0 and %d", tt.n, len(s), cap(s), tt.wantCap)
			}
			s = append(s, make([]uint64, tt.n)...)
			p.Put(s)
			if poisoned := tt.n > 0 && s[0] == Poison && s[tt.n-1] == Poison; poisoned != tt.pooled {
				t.Fatalf("Put of cap %d: poisoned %v, want %v", cap(s), poisoned, tt.pooled)
			}
		})
	}
}

func TestIgnoresForeignSlices(t *testing.T) {
	p := &Pool{poison: true}
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
			p.Put(tt.s)
			if tt.s[0] == Poison {
				t.Fatal("a slice of no class was taken")
			}
		})
	}
}
