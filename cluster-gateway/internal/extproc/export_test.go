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
