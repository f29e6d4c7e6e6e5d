// Package prefix is the prompt-prefix hashing contract shared by every Switchyard tier and by the
// simulator: a prompt is cut into blocks of BlockSize bytes of its text as sent (about 16 tokens),
// and block i's hash is xxhash64 (seed 0) of the 72 bytes made of the hash of block i-1 (8 bytes,
// little-endian) followed by the block's bytes, the chain seeded with xxhash64 of the model name.
// Two prompts share their first k block hashes exactly when they share their first k·BlockSize
// bytes and the model, so a block hash names a cacheable prefix.
package prefix

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// BlockSize is the number of prompt bytes per hashed block. At about four characters per token it
// matches the 16-token KV block of vLLM.
const BlockSize = 64

// Seed returns the chain seed for a model: the hash every prompt's chain starts from.
func Seed(model string) uint64 {
	return xxhash.Sum64String(model)
}

// Hashes appends to dst the chained hashes of prompt's complete blocks, at most maxBlocks of them
// (maxBlocks <= 0 means no limit), and returns the extended slice. A trailing partial block is not
// hashed: it cannot be a cache hit on its own.
func Hashes(dst []uint64, model string, prompt []byte, maxBlocks int) []uint64 {
	n := len(prompt) / BlockSize
	if maxBlocks > 0 && n > maxBlocks {
		n = maxBlocks
	}
	dst = grow(dst, n)
	// One one-shot hash per block over a stack buffer: the streaming Digest's buffering of the
	// 8-byte link and of the block's unaligned tail cost more than hashing the 72 bytes.
	var in [8 + BlockSize]byte
	h := Seed(model)
	for i := range n {
		binary.LittleEndian.PutUint64(in[:8], h)
		copy(in[8:], prompt[i*BlockSize:(i+1)*BlockSize])
		h = xxhash.Sum64(in[:])
		dst = append(dst, h)
	}
	return dst
}

// Next returns the hash of the block that follows a block whose hash is prev. block is normally
// BlockSize bytes long; other lengths hash the same way (the link, then the bytes).
func Next(prev uint64, block []byte) uint64 {
	if len(block) == BlockSize {
		var in [8 + BlockSize]byte
		binary.LittleEndian.PutUint64(in[:8], prev)
		copy(in[8:], block)
		return xxhash.Sum64(in[:])
	}
	var d xxhash.Digest
	d.Reset()
	var link [8]byte
	binary.LittleEndian.PutUint64(link[:], prev)
	_, _ = d.Write(link[:])
	_, _ = d.Write(block)
	return d.Sum64()
}

// grow makes room for n more hashes in dst with at most one allocation.
func grow(dst []uint64, n int) []uint64 {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	out := make([]uint64, len(dst), len(dst)+n)
	copy(out, dst)
	return out
}
