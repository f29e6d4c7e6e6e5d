package body

import (
	"math/bits"
	"sync"
)

// The growth pool recycles the buffers a body outgrows. Doubling from FirstSize, a body passes
// through buffers of 4 KiB, 8 KiB, ... before the one it ends in; each is copied into the next
// and then seen by nobody, so it can serve the next body's growth instead of being allocated
// (and zeroed) again. A buffer that a body ends in is handed to the caller and never comes back
// here: the caller's bytes may outlive Release (an HTTP transport still writing them upstream).
// Classes are the powers of two from FirstSize to maxScratch; other sizes (the exact buffer of a
// declared length, bodies beyond maxScratch) are allocated.
const (
	maxScratch     = 1 << 20
	scratchClassNo = 9 // FirstSize << 0 ... FirstSize << 8 = maxScratch
)

var scratchClasses [scratchClassNo]sync.Pool

// pooling is false in builds with the nopool tag (nopool.go), which bypass the package's pools
// so that benchmarks can measure what they save.
var pooling = true

// scratchClass is the class of a buffer of exactly size bytes, or -1.
func scratchClass(size int64) int {
	if size < FirstSize || size > maxScratch || size&(size-1) != 0 {
		return -1
	}
	return bits.TrailingZeros64(uint64(size)) - bits.TrailingZeros(FirstSize)
}

// getScratch returns an empty buffer of capacity size from its class, or nil when size has none.
func getScratch(size int64) *[]byte {
	c := scratchClass(size)
	if c < 0 {
		return nil
	}
	if pooling {
		if b, ok := scratchClasses[c].Get().(*[]byte); ok {
			return b
		}
	}
	b := make([]byte, 0, size)
	return &b
}

// putScratch returns a buffer from getScratch.
func putScratch(b *[]byte) {
	if c := scratchClass(int64(cap(*b))); pooling && c >= 0 {
		*b = (*b)[:0]
		scratchClasses[c].Put(b)
	}
}
