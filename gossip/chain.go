package gossip

import (
	"crypto/sha256"
	"encoding/binary"
)

// Linked chunks. A summary or delta cut into several chunks is linked: chunk i carries the digest
// of chunk i+1 (its link; the last chunk's is zero), and every chunk carries the digest of chunk
// 0 (the head), which names the message. A chunk's digest covers the node name, the sequence, the
// chunk's index and count, its payload and its link, so chunk 0 is checked against the head alone
// and each later chunk against the link of the one before: a receiver knows a chunk is the one the
// publisher cut before it stores it, and assembles the chunks of one head apart from any other
// message under the same node name and sequence. A node holding the gossip key can still send
// chunks of a message of its own making (under a head of its own), but it cannot make a genuine
// message's assembly hold a forged piece, nor hold it back: the genuine one completes beside
// it, and only a complete message is verified and applied.
//
// This authenticates nothing on its own (an attacker computes digests as easily as the
// publisher): the complete summary's signature does. The digests only make sure that what the
// publisher cut is what gets reassembled.

// digestSize is the size of a chunk digest: the first 16 bytes of a SHA-256, so that forging a
// chunk that matches a genuine digest takes a second preimage of 128 bits.
const digestSize = 16

// digest is a linked chunk's digest.
type digest [digestSize]byte

// zero reports whether d is the zero digest (the last chunk's link).
func (d digest) zero() bool { return d == digest{} }

// chunkDomain separates chunk digests from any other use of SHA-256.
const chunkDomain = "switchyard.gossip.v1.chunk\x00"

// chunkDigest returns the digest of chunk index of count, of node's message seq, with payload
// and link.
func chunkDigest(node string, seq uint64, index, count int, payload []byte, link digest) digest {
	h := sha256.New()
	var hdr [len(chunkDomain) + 1 + maxNodeName + 8 + 2 + 2]byte
	b := append(hdr[:0], chunkDomain...)
	b = append(b, byte(len(node)))
	b = append(b, node...)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = binary.BigEndian.AppendUint16(b, uint16(index))
	b = binary.BigEndian.AppendUint16(b, uint16(count))
	h.Write(b)
	h.Write(payload)
	h.Write(link[:])
	var sum [sha256.Size]byte
	var d digest
	copy(d[:], h.Sum(sum[:0]))
	return d
}

// chainDigests returns the digest of every part, computed from the last (whose link is zero) to
// the first, each covering the next one's digest as its link.
func chainDigests(node string, seq uint64, parts [][]byte) []digest {
	out := make([]digest, len(parts))
	var link digest
	for i := len(parts) - 1; i >= 0; i-- {
		out[i] = chunkDigest(node, seq, i, len(parts), parts[i], link)
		link = out[i]
	}
	return out
}

// digestOf returns c's digest.
func (c chunk) digestOf() digest {
	return chunkDigest(c.node, c.seq, c.index, c.count, c.payload, c.link)
}
