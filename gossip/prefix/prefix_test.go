package prefix_test

import (
	"bytes"
	"testing"

	"github.com/switchyard-dev/switchyard/gossip/prefix"
)

func TestHashesChain(t *testing.T) {
	a := bytes.Repeat([]byte("abcdefgh"), 40) // 320 bytes: 5 blocks
	b := append(bytes.Clone(a[:3*prefix.BlockSize]), bytes.Repeat([]byte("z"), 2*prefix.BlockSize)...)

	tests := []struct {
		name       string
		modelA     string
		modelB     string
		promptB    []byte
		wantShared int
	}{
		{"same prompt same model", "m", "m", a, 5},
		{"diverge after three blocks", "m", "m", b, 3},
		{"same prompt other model", "m", "n", a, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ha := prefix.Hashes(nil, tt.modelA, a, 0)
			hb := prefix.Hashes(nil, tt.modelB, tt.promptB, 0)
			shared := 0
			for shared < len(ha) && shared < len(hb) && ha[shared] == hb[shared] {
				shared++
			}
			if shared != tt.wantShared {
				t.Fatalf("shared blocks = %d, want %d", shared, tt.wantShared)
			}
		})
	}
}

func TestHashesLimitsAndPartialBlocks(t *testing.T) {
	p := bytes.Repeat([]byte("x"), 3*prefix.BlockSize+10)
	if got := len(prefix.Hashes(nil, "m", p, 0)); got != 3 {
		t.Fatalf("blocks = %d, want 3 (partial block not hashed)", got)
	}
	if got := len(prefix.Hashes(nil, "m", p, 2)); got != 2 {
		t.Fatalf("blocks = %d, want 2 with maxBlocks=2", got)
	}
	full := prefix.Hashes(nil, "m", p, 0)
	if got := prefix.Next(full[0], p[prefix.BlockSize:2*prefix.BlockSize]); got != full[1] {
		t.Fatalf("Next disagrees with Hashes: %x != %x", got, full[1])
	}
}

func BenchmarkHashes100KB(b *testing.B) {
	p := bytes.Repeat([]byte("The quick brown fox jumps over the lazy dog. "), 100*1024/45)
	dst := make([]uint64, 0, len(p)/prefix.BlockSize)
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		dst = prefix.Hashes(dst[:0], "llama", p, 0)
	}
}
