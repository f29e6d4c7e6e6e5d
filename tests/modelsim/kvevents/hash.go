package kvevents

import (
	"crypto/sha256"
	"encoding/binary"
)

// BlockHashes returns the hashes vLLM reports for the full blocks of tokens under
// --prefix-caching-hash-algo=sha256_cbor with PYTHONHASHSEED=seed: block i hashes to
// SHA-256(canonical CBOR [parent, [token ids of block i], extra_keys]), parent being block i-1's
// 32-byte digest and, for block 0, SHA-256(CBOR(seed)); extra_keys is null, or [adapter] for a
// LoRA adapter. The reported hash is the digest's last 8 bytes, big-endian.
func BlockHashes(seed string, tokens []int64, blockSize int, adapter string) []uint64 {
	if blockSize < 1 {
		return nil
	}
	out := make([]uint64, 0, len(tokens)/blockSize)
	buf := appendText(nil, seed)
	parent := sha256.Sum256(buf)
	for lo := 0; lo+blockSize <= len(tokens); lo += blockSize {
		buf = append(buf[:0], 0x83)     // array(3)
		buf = append(buf, 0x58, 32)     // bytes(32)
		buf = append(buf, parent[:]...) // the parent digest
		buf = appendHead(buf, 4, uint64(blockSize))
		for _, t := range tokens[lo : lo+blockSize] {
			if t < 0 {
				buf = appendHead(buf, 1, uint64(-1-t))
			} else {
				buf = appendHead(buf, 0, uint64(t))
			}
		}
		if adapter == "" {
			buf = append(buf, 0xf6) // null
		} else {
			buf = appendText(append(buf, 0x81), adapter)
		}
		parent = sha256.Sum256(buf)
		out = append(out, binary.BigEndian.Uint64(parent[24:]))
	}
	return out
}

// appendHead appends the shortest CBOR head of major type major and argument n.
func appendHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n < 1<<8:
		return append(b, m|24, byte(n))
	case n < 1<<16:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(n))
	case n < 1<<32:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, m|27), n)
}

func appendText(b []byte, s string) []byte {
	return append(appendHead(b, 3, uint64(len(s))), s...)
}
