package preciseprefix

import (
	"crypto/sha256"
	"encoding/binary"
)

// HashAlgo is vLLM's --prefix-caching-hash-algo whose block hashes the scorer reproduces.
const HashAlgo = "sha256_cbor"

// hasher chains block hashes the way vLLM does with sha256_cbor: block i's hash is
// SHA-256(CBOR([parent, [token ids of block i], extra_keys])) where parent is block i-1's
// 32-byte hash, and for block 0 the root SHA-256(CBOR(seed)) (seed is PYTHONHASHSEED); extra
// keys are null, or [adapter name] for a LoRA adapter. The engine reports a hash as the
// big-endian integer of its last 8 bytes.
type hasher struct {
	root [32]byte
	buf  []byte
}

func newHasher(seed string) *hasher {
	h := &hasher{}
	h.buf = cborText(h.buf[:0], seed)
	h.root = sha256.Sum256(h.buf)
	return h
}

// chain appends to dst the reported hashes of the full blocks of tokens, at most maxBlocks.
func (h *hasher) chain(dst []uint64, tokens []int64, blockSize, maxBlocks int, adapter string) []uint64 {
	parent := h.root
	for i := 0; (i+1)*blockSize <= len(tokens) && i < maxBlocks; i++ {
		b := h.buf[:0]
		b = append(b, 0x83) // array of 3
		b = cborHead(b, 2, 32)
		b = append(b, parent[:]...)
		blk := tokens[i*blockSize : (i+1)*blockSize]
		b = cborHead(b, 4, uint64(len(blk)))
		for _, t := range blk {
			b = cborInt(b, t)
		}
		if adapter == "" {
			b = append(b, 0xf6) // null
		} else {
			b = append(b, 0x81)
			b = cborText(b, adapter)
		}
		h.buf = b
		parent = sha256.Sum256(b)
		dst = append(dst, binary.BigEndian.Uint64(parent[24:]))
	}
	return dst
}

// cborHead appends a CBOR head of major type major and argument n, in its shortest form (the
// canonical encoding cbor2 writes).
func cborHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= 0xff:
		return append(b, m|24, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, m|27), n)
}

func cborInt(b []byte, v int64) []byte {
	if v < 0 {
		return cborHead(b, 1, uint64(-1-v))
	}
	return cborHead(b, 0, uint64(v))
}

func cborText(b []byte, s string) []byte {
	return append(cborHead(b, 3, uint64(len(s))), s...)
}
