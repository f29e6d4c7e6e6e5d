package bbr

import (
	"math/bits"
	"sync"
	"unsafe"
)

// Size classes of hashPool, in hashes: powers of two from 64 (a 4 KiB prompt, 512 bytes) to
// 65,536 (a 4 MiB prompt, 512 KiB). Longer chains are not pooled.
const (
	minHashShift = 6
	maxHashShift = 16
)

// PoisonHash fills the hash slices given back to a poisoning router (see PoisonReleasedHashes):
// a request that still reads its prefix hashes after they were released sees it.
const PoisonHash uint64 = 0xEEEE_EEEE_EEEE_EEEE

// hashPool recycles prefix-hash slices: a 100 KB prompt has 1,600 hashes, 12.5 KiB that every
// request allocated and left to the garbage collector. Each class holds slices whose capacity
// is exactly its power of two. It is safe for concurrent use.
type hashPool struct {
	// classes hold the first element of each free slice: a pointer fits in an interface
	// without an allocation, and the class gives the capacity back.
	classes [maxHashShift - minHashShift + 1]sync.Pool
	poison  bool // tests: overwrite returned slices so that a read after Put shows
}

// get returns an empty slice with room for at least n hashes (nil when n is 0).
func (p *hashPool) get(n int) []uint64 {
	if n <= 0 {
		return nil
	}
	shift := max(bits.Len(uint(n-1)), minHashShift)
	if shift > maxHashShift {
		return make([]uint64, 0, n)
	}
	if first, ok := p.classes[shift-minHashShift].Get().(*uint64); ok {
		return unsafe.Slice(first, 1<<shift)[:0]
	}
	return make([]uint64, 0, 1<<shift)
}

// put gives s back. Slices whose capacity is not a class's (not from get, or resliced from
// the front) are left to the garbage collector. The caller must not use s afterwards.
func (p *hashPool) put(s []uint64) {
	c := cap(s)
	shift := bits.Len(uint(c)) - 1
	if shift < minHashShift || shift > maxHashShift || c != 1<<shift {
		return
	}
	s = s[:c]
	if p.poison {
		for i := range s {
			s[i] = PoisonHash
		}
	}
	p.classes[shift-minHashShift].Put(&s[0])
}
