package extproc

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

// Size classes of bufferPool: powers of two from 256 B to 4 MiB.
const (
	minClassShift = 8
	maxClassShift = 22
)

// poisonByte fills buffers returned to a poisoning pool.
const poisonByte = 0xEE

// bufferPool is the gRPC buffer pool of the ext_proc server. gRPC's default pool zeroes every
// buffer it hands out and has no class between 32 KiB and 1 MiB, so each ~64 KiB body chunk
// Envoy streams (and each 62,000-byte chunk sent back) costs clearing 1 MiB: for a 100 KB body
// that was most of the decision's CPU time. This pool has a class at every power of two and
// does not zero: gRPC only reads the bytes it wrote into a buffer. Larger requests are not
// pooled. It is safe for concurrent use.
type bufferPool struct {
	classes [maxClassShift - minClassShift + 1]sync.Pool
	poison  bool // tests: overwrite returned buffers so that a use after Put shows
}

var _ mem.BufferPool = (*bufferPool)(nil)

// pooling is false in builds with the nopool tag (nopool.go), which bypass the package's pools
// so that benchmarks can measure what they save.
var pooling = true

func newBufferPool() *bufferPool { return &bufferPool{} }

// Get returns a buffer of length n from the smallest class that holds it.
func (p *bufferPool) Get(n int) *[]byte {
	shift := max(bits.Len(uint(max(n, 1)-1)), minClassShift)
	if shift > maxClassShift {
		b := make([]byte, n)
		return &b
	}
	if pooling {
		if b, ok := p.classes[shift-minClassShift].Get().(*[]byte); ok {
			*b = (*b)[:n]
			return b
		}
	}
	b := make([]byte, n, 1<<shift)
	return &b
}

// Put returns a buffer to the class its capacity fills; buffers of other sizes are dropped.
func (p *bufferPool) Put(b *[]byte) {
	c := cap(*b)
	shift := bits.Len(uint(c)) - 1
	if !pooling || shift < minClassShift || shift > maxClassShift || c != 1<<shift {
		return
	}
	if p.poison {
		for i := range (*b)[:c] {
			(*b)[:c][i] = poisonByte
		}
	}
	p.classes[shift-minClassShift].Put(b)
}
