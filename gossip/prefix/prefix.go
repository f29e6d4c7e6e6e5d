// Package prefix is the prompt-prefix hashing contract shared by every Switchyard tier and by the
// simulator: a prompt is cut into blocks of BlockSize bytes of its text as sent (about 16 tokens),
// and block i's hash is xxhash64 over (hash of block i-1, block bytes), the chain seeded with a hash
// of the model name. Two prompts share their first k block hashes exactly when they share their
// first k·BlockSize bytes and the model, so a block hash names a cacheable prefix.
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
	h := Seed(model)
	var d xxhash.Digest
	var buf [8]byte
	for i := 0; i < n; i++ {
		d.Reset()
		binary.LittleEndian.PutUint64(buf[:], h)
		_, _ = d.Write(buf[:])
		_, _ = d.Write(prompt[i*BlockSize : (i+1)*BlockSize])
		h = d.Sum64()
		dst = append(dst, h)
	}
	return dst
}

// Next returns the hash of the block that follows a block whose hash is prev.
func Next(prev uint64, block []byte) uint64 {
	var d xxhash.Digest
	d.Reset()
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], prev)
	_, _ = d.Write(buf[:])
	_, _ = d.Write(block)
	return d.Sum64()
}
