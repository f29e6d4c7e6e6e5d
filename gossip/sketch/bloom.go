// Package sketch provides the Bloom filter a gateway uses to tell routers which prefix blocks its
// cluster holds in cache. Items are 64-bit prefix-block hashes (see package prefix); the filter
// converts to and from the wire message gossipv1.PrefixSketch.
package sketch

import (
	"errors"
	"fmt"
	"math"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Limits a decoded filter must respect; they bound the memory an untrusted message can claim.
const (
	// MaxBits is the largest filter accepted: 2^23 bits (1 MiB).
	MaxBits = 1 << 23
	// MaxHashes is the largest number of hash positions per item accepted.
	MaxHashes = 32
)

// ErrInvalid reports a sketch message that does not describe a usable filter.
var ErrInvalid = errors.New("sketch: invalid filter")

// Bloom is a Bloom filter over 64-bit hashes. It is not safe for concurrent use: a gateway builds
// one, converts it with Proto and hands the message to gossip.
type Bloom struct {
	bits  []byte
	m     uint64
	k     uint32
	seed  uint64
	items uint32
}

// New returns an empty filter of m bits (rounded up to a whole byte) with k hash positions per item.
func New(m, k uint32, seed uint64) (*Bloom, error) {
	if m == 0 || m > MaxBits {
		return nil, fmt.Errorf("%w: %d bits, want 1..%d", ErrInvalid, m, MaxBits)
	}
	if k == 0 || k > MaxHashes {
		return nil, fmt.Errorf("%w: %d hashes, want 1..%d", ErrInvalid, k, MaxHashes)
	}
	m = (m + 7) &^ 7
	return &Bloom{bits: make([]byte, m/8), m: uint64(m), k: k, seed: seed}, nil
}

// NewForCapacity returns an empty filter sized so that holding n items gives a false-positive rate
// of about p (0 < p < 1).
func NewForCapacity(n int, p float64, seed uint64) (*Bloom, error) {
	if n <= 0 || !(p > 0 && p < 1) {
		return nil, fmt.Errorf("%w: capacity %d, false-positive rate %v", ErrInvalid, n, p)
	}
	m, k := Dimensions(n, p)
	return New(m, k, seed)
}

// Dimensions returns the bit count m and hash count k that hold n items at false-positive rate p:
// m = -n·ln p / (ln 2)², k = (m/n)·ln 2.
func Dimensions(n int, p float64) (m, k uint32) {
	bits := math.Ceil(-float64(n) * math.Log(p) / (math.Ln2 * math.Ln2))
	if bits > MaxBits {
		bits = MaxBits
	}
	hashes := math.Round(bits / float64(n) * math.Ln2)
	hashes = math.Max(1, math.Min(hashes, MaxHashes))
	return uint32(bits), uint32(hashes)
}

// Add inserts a hash.
func (b *Bloom) Add(h uint64) {
	h1, h2 := b.positions(h)
	for i := uint64(0); i < uint64(b.k); i++ {
		p := (h1 + i*h2) % b.m
		b.bits[p>>3] |= 1 << (p & 7)
	}
	b.items++
}

// Contains reports whether h may have been added (false positives possible, no false negatives).
func (b *Bloom) Contains(h uint64) bool {
	h1, h2 := b.positions(h)
	for i := uint64(0); i < uint64(b.k); i++ {
		p := (h1 + i*h2) % b.m
		if b.bits[p>>3]&(1<<(p&7)) == 0 {
			return false
		}
	}
	return true
}

// LongestPrefix returns how many leading hashes of a chain (as prefix.Hashes returns it) the filter
// contains: the number of prompt blocks likely cached.
func (b *Bloom) LongestPrefix(chain []uint64) int {
	for i, h := range chain {
		if !b.Contains(h) {
			return i
		}
	}
	return len(chain)
}

// Reset empties the filter, keeping its size and seed.
func (b *Bloom) Reset() {
	clear(b.bits)
	b.items = 0
}

// Len returns the number of Add calls since creation or Reset.
func (b *Bloom) Len() int { return int(b.items) }

// Bits returns the filter size in bits.
func (b *Bloom) Bits() int { return int(b.m) }

// Hashes returns the number of hash positions per item.
func (b *Bloom) Hashes() int { return int(b.k) }

// EstimatedFalsePositiveRate returns (1 - e^(-k·n/m))^k for the items added so far.
func (b *Bloom) EstimatedFalsePositiveRate() float64 {
	k, n, m := float64(b.k), float64(b.items), float64(b.m)
	return math.Pow(1-math.Exp(-k*n/m), k)
}

// positions derives the double-hashing pair from an item's hash and the filter seed.
func (b *Bloom) positions(h uint64) (h1, h2 uint64) {
	h1 = mix(h ^ b.seed)
	h2 = mix(h1) | 1
	return h1, h2
}

// mix is the splitmix64 finaliser: it spreads every input bit over the output.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Proto returns the filter as a wire message. The message shares no memory with the filter.
func (b *Bloom) Proto() *gossipv1.PrefixSketch {
	return &gossipv1.PrefixSketch{
		Bits:      append([]byte(nil), b.bits...),
		NumBits:   uint32(b.m),
		NumHashes: b.k,
		Seed:      b.seed,
		NumItems:  b.items,
	}
}

// FromProto rebuilds a filter from a wire message, checking that it is consistent.
func FromProto(p *gossipv1.PrefixSketch) (*Bloom, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: no sketch", ErrInvalid)
	}
	m, k := p.GetNumBits(), p.GetNumHashes()
	if m == 0 || m > MaxBits || m%8 != 0 {
		return nil, fmt.Errorf("%w: %d bits, want a multiple of 8 in 8..%d", ErrInvalid, m, MaxBits)
	}
	if k == 0 || k > MaxHashes {
		return nil, fmt.Errorf("%w: %d hashes, want 1..%d", ErrInvalid, k, MaxHashes)
	}
	if len(p.GetBits()) != int(m/8) {
		return nil, fmt.Errorf("%w: %d bytes of bits for %d bits", ErrInvalid, len(p.GetBits()), m)
	}
	return &Bloom{
		bits:  append([]byte(nil), p.GetBits()...),
		m:     uint64(m),
		k:     k,
		seed:  p.GetSeed(),
		items: p.GetNumItems(),
	}, nil
}
