// Package hashpool recycles the slices that hold a prompt's prefix-block hashes: a 100 KB prompt
// has 1,600 hashes, 12.5 KiB that every request would otherwise allocate and leave to the
// garbage collector. Body-based routing takes a request's slice from a Pool and gives it back
// once the request is over.
package hashpool

import (
	"math/bits"
	"sync"
	"unsafe"
)

// Size classes of a Pool, in hashes: powers of two from 64 (a 4 KiB prompt, 512 bytes) to
// 65,536 (a 4 MiB prompt, 512 KiB). Longer chains are not pooled.
const (
	minShift = 6
	maxShift = 16
)

// Poison fills the slices given back to a poisoning Pool (see SetPoison): a request that still
// reads its prefix hashes after they were released sees it.
const Poison uint64 = 0xEEEE_EEEE_EEEE_EEEE

// pooling is false in builds with the nopool tag (nopool.go), which bypass the package's pools
// so that benchmarks can measure what they save.
var pooling = true

// Pool recycles hash slices. Each class holds slices whose capacity is exactly its power of two.
// The zero value is ready to use; it is safe for concurrent use.
type Pool struct {
	// classes hold the first element of each free slice: a pointer fits in an interface
	// without an allocation, and the class gives the capacity back.
	classes [maxShift - minShift + 1]sync.Pool
	poison  bool // tests: overwrite returned slices so that a read after Put shows
}

// SetPoison makes Put overwrite every slice it takes back with Poison. For tests; call it before
// the pool is used.
func (p *Pool) SetPoison() { p.poison = true }

// Get returns an empty slice with room for at least n hashes (nil when n is 0).
func (p *Pool) Get(n int) []uint64 {
	if n <= 0 {
		return nil
	}
	shift := max(bits.Len(uint(n-1)), minShift)
	if shift > maxShift {
		return make([]uint64, 0, n)
	}
	if pooling {
		if first, ok := p.classes[shift-minShift].Get().(*uint64); ok {
			return unsafe.Slice(first, 1<<shift)[:0]
		}
	}
	return make([]uint64, 0, 1<<shift)
}

// Put gives s back. Slices whose capacity is not a class's (not from Get, or resliced from the
// front) are left to the garbage collector. The caller must not use s afterwards.
func (p *Pool) Put(s []uint64) {
	c := cap(s)
	shift := bits.Len(uint(c)) - 1
	if !pooling || shift < minShift || shift > maxShift || c != 1<<shift {
		return
	}
	s = s[:c]
	if p.poison {
		for i := range s {
			s[i] = Poison
		}
	}
	p.classes[shift-minShift].Put(&s[0])
}
