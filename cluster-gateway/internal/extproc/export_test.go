package extproc

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// NewCodec exposes the server's protobuf codec and buffer pool to the benchmark's stand-in for
// Envoy.
func NewCodec() encoding.CodecV2 { return codec{pool: newBufferPool()} }

// NewBufferPoolForTest exposes the server's buffer pool.
func NewBufferPoolForTest() mem.BufferPool { return newBufferPool() }

// PoisonFreedBuffers makes s overwrite every pooled buffer it gets back, so that a body still
// read after its buffer was freed comes back corrupted. Call it before Serve.
func PoisonFreedBuffers(s *Server) { s.pool.poison = true }
