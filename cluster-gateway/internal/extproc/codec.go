package extproc

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// codec is gRPC's protobuf codec with the buffers taken from pool instead of gRPC's global
// default pool (whose buffers are zeroed, see bufferPool). It is safe for concurrent use.
type codec struct {
	pool mem.BufferPool
}

var _ encoding.CodecV2 = codec{}

// Marshal encodes v into one pooled buffer. gRPC's own codec gives small messages (under
// 1 KiB) a fresh slice instead, two allocations per message; its buffer objects are pooled, so
// a pooled buffer costs none.
func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("extproc: cannot marshal %T: not a proto message", v)
	}
	size := proto.Size(m)
	opts := proto.MarshalOptions{UseCachedSize: true} // the size was just computed
	buf := c.pool.Get(size)
	if _, err := opts.MarshalAppend((*buf)[:0], m); err != nil {
		c.pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, c.pool)}, nil
}

// Unmarshal decodes data into v. Bytes fields are copied, so v does not alias pooled memory,
// except into a *received, whose body chunk aliases a buffer that it then holds.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*received); ok {
		return c.unmarshalReceived(data, r)
	}
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("extproc: cannot unmarshal into %T: not a proto message", v)
	}
	buf := data.MaterializeToBuffer(c.pool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

// Name is the content subtype the codec serves.
func (codec) Name() string { return "proto" }

// unmarshalReceived decodes a ProcessingRequest into r, keeping the buffer when the body
// aliases it.
func (c codec) unmarshalReceived(data mem.BufferSlice, r *received) error {
	buf := data.MaterializeToBuffer(c.pool)
	req, aliased, err := decodeRequest(buf.ReadOnlyData())
	if err != nil || !aliased {
		buf.Free()
		buf = nil
	}
	if err != nil {
		return err
	}
	r.req, r.buf = req, buf
	return nil
}
