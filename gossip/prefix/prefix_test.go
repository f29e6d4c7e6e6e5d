package prefix_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/switchyard-dev/switchyard/gossip/prefix"
)

// TestHashesKnownAnswers pins the contract: the values other tiers and older releases compute for
// the same prompt. A change here breaks prefix matching between mixed versions.
func TestHashesKnownAnswers(t *testing.T) {
	p := bytes.Repeat([]byte("abcdefgh"), 40)
	want := []uint64{0xe3f39ea22501abf8, 0x986c94da838f9793, 0x5e1a65f5a01f6c51}
	if got := prefix.Seed("llama"); got != 0xdcb63eabb0e1361a {
		t.Fatalf("seed = %#x", got)
	}
	got := prefix.Hashes(nil, "llama", p, 3)
	if len(got) != len(want) {
		t.Fatalf("hashes = %x, want %x", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("hash %d = %#x, want %#x", i, got[i], want[i])
		}
	}
}

// reference computes the chain as the contract states it, with the streaming digest.
func reference(model string, prompt []byte) []uint64 {
	var out []uint64
	h := xxhash.Sum64String(model)
	for i := 0; i+prefix.BlockSize <= len(prompt); i += prefix.BlockSize {
		d := xxhash.New()
		_ = binary.Write(d, binary.LittleEndian, h)
		_, _ = d.Write(prompt[i : i+prefix.BlockSize])
		h = d.Sum64()
		out = append(out, h)
	}
	return out
}

func TestHashesMatchReference(t *testing.T) {
	var prompt []byte
	for i := range 50*prefix.BlockSize + 7 {
		prompt = append(prompt, byte(i*31+i/7))
	}
	for _, n := range []int{0, 1, prefix.BlockSize - 1, prefix.BlockSize, 3*prefix.BlockSize + 5, len(prompt)} {
		want := reference("model-a", prompt[:n])
		dst := []uint64{42} // appended to, not overwritten
		got := prefix.Hashes(dst, "model-a", prompt[:n], 0)
		if len(got) != len(want)+1 || got[0] != 42 {
			t.Fatalf("len %d: got %d hashes (first %d), want %d after the existing one", n, len(got), got[0], len(want))
		}
		for i := range want {
			if got[i+1] != want[i] {
				t.Fatalf("len %d: hash %d = %#x, want %#x", n, i, got[i+1], want[i])
			}
		}
	}
}

func TestNextOddLengths(t *testing.T) {
	for _, n := range []int{0, 5, prefix.BlockSize + 3} {
		block := bytes.Repeat([]byte("q"), n)
		d := xxhash.New()
		_ = binary.Write(d, binary.LittleEndian, uint64(7))
		_, _ = d.Write(block)
		if got, want := prefix.Next(7, block), d.Sum64(); got != want {
			t.Fatalf("Next over %d bytes = %#x, want %#x", n, got, want)
		}
	}
}

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
