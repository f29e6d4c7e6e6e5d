package gossip

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Figure masks. A delta names the figures of a model or adapter that changed with a bit mask of
// field numbers (bit n-1: field n) and carries their new values as a packed list of varints, in
// field number order. Only proto3 scalars numbered 1..64 can be named (bool, uint32, uint64,
// int32, int64, enum, float, double); a message whose other fields, or unknown fields, changed
// travels with its figures in full instead. The varint of a value is kept short: floats are sent
// as their bits in reverse order, because rounded figures (see Precision) end in zero bits, and
// signed integers zig-zag encoded.

// maxMaskField is the highest field number a figure mask can name.
const maxMaskField = 64

// wireBuffers holds the buffers apply encodes figures into (at most 64 figures of 11 bytes).
var wireBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 128); return &b }}

func getWireBuffer() *[]byte {
	if !pooling {
		return wireBuffers.New().(*[]byte)
	}
	return wireBuffers.Get().(*[]byte)
}

func putWireBuffer(b *[]byte) {
	if pooling {
		wireBuffers.Put(b)
	}
}

// figureSet is the fields of a message type that figure masks may name, in field number order.
type figureSet struct {
	fields []protoreflect.FieldDescriptor
	skip   []protoreflect.FieldDescriptor // fields a delta carries apart (names, lists, sketches)
}

// newFigureSet returns the figures of md: every field but skip.
func newFigureSet(md protoreflect.MessageDescriptor, skip []protoreflect.FieldDescriptor) figureSet {
	fs := figureSet{skip: skip}
	for i := 0; i < md.Fields().Len(); i++ {
		if fd := md.Fields().Get(i); !slices.Contains(skip, fd) {
			fs.fields = append(fs.fields, fd)
		}
	}
	slices.SortFunc(fs.fields, func(a, b protoreflect.FieldDescriptor) int { return int(a.Number()) - int(b.Number()) })
	return fs
}

// diff returns the mask and values that turn b's figures into n's (b and n of the set's type).
// ok is false when a mask cannot express the change: a figure that is not a scalar numbered up to
// maxMaskField, or the unknown fields, differ.
func (fs figureSet) diff(b, n protoreflect.Message) (mask uint64, values []uint64, ok bool) {
	if !bytes.Equal(b.GetUnknown(), n.GetUnknown()) {
		return 0, nil, false
	}
	for _, fd := range fs.fields {
		if b.Has(fd) == n.Has(fd) && b.Get(fd).Equal(n.Get(fd)) {
			continue
		}
		v, ok := figureBits(fd, n.Get(fd))
		if !ok {
			return 0, nil, false
		}
		mask |= 1 << (fd.Number() - 1)
		values = append(values, v)
	}
	return mask, values, true
}

// apply sets on m the figures that mask and values name. It refuses (ErrMalformed) a mask naming
// a field m does not have or one the set skips, a value out of its field's range, and a number of
// values other than the mask's bits. The figures are set by merging their wire encoding into m,
// which is much cheaper than setting them one by one through reflection.
func (fs figureSet) apply(m proto.Message, mask uint64, values []uint64) error {
	if bits.OnesCount64(mask) != len(values) {
		return fmt.Errorf("%w: figure mask names %d figures, %d values", ErrMalformed, bits.OnesCount64(mask), len(values))
	}
	fields := m.ProtoReflect().Descriptor().Fields()
	buf := getWireBuffer()
	defer putWireBuffer(buf)
	wire := (*buf)[:0]
	defer func() { *buf = wire[:0] }()
	for i := 0; mask != 0; i++ {
		num := bits.TrailingZeros64(mask) + 1
		mask &= mask - 1
		fd := fields.ByNumber(protoreflect.FieldNumber(num))
		if fd == nil || slices.Contains(fs.skip, fd) {
			return fmt.Errorf("%w: figure mask names field %d", ErrMalformed, num)
		}
		var ok bool
		if wire, ok = appendFigure(wire, fd, values[i]); !ok {
			return fmt.Errorf("%w: figure %d: value %d out of range", ErrMalformed, num, values[i])
		}
	}
	if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(wire, m); err != nil {
		return fmt.Errorf("%w: figures: %v", ErrMalformed, err)
	}
	return nil
}

// figureBits encodes a scalar figure as a varint value; ok is false for fields a mask cannot name.
func figureBits(fd protoreflect.FieldDescriptor, v protoreflect.Value) (uint64, bool) {
	if fd.Cardinality() == protoreflect.Repeated || fd.Number() > maxMaskField {
		return 0, false
	}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		if v.Bool() {
			return 1, true
		}
		return 0, true
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind:
		return v.Uint(), true
	case protoreflect.Int32Kind, protoreflect.Int64Kind:
		return zigzag(v.Int()), true
	case protoreflect.EnumKind:
		return zigzag(int64(v.Enum())), true
	case protoreflect.FloatKind:
		return uint64(bits.Reverse32(math.Float32bits(float32(v.Float())))), true
	case protoreflect.DoubleKind:
		return bits.Reverse64(math.Float64bits(v.Float())), true
	}
	return 0, false
}

// appendFigure appends the protobuf encoding of field fd with the value u that figureBits made;
// ok is false when u is out of the field's range or fd is not a field a mask can name.
func appendFigure(b []byte, fd protoreflect.FieldDescriptor, u uint64) ([]byte, bool) {
	if fd.Cardinality() == protoreflect.Repeated {
		return b, false
	}
	num := fd.Number()
	varint := func(v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
	}
	fixed32 := func(v uint32) []byte {
		return protowire.AppendFixed32(protowire.AppendTag(b, num, protowire.Fixed32Type), v)
	}
	fixed64 := func(v uint64) []byte {
		return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), v)
	}
	i := unzigzag(u)
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return varint(u), u <= 1
	case protoreflect.Uint32Kind:
		return varint(u), u <= math.MaxUint32
	case protoreflect.Uint64Kind:
		return varint(u), true
	case protoreflect.Int32Kind, protoreflect.EnumKind:
		return varint(uint64(i)), i >= math.MinInt32 && i <= math.MaxInt32
	case protoreflect.Int64Kind:
		return varint(uint64(i)), true
	case protoreflect.FloatKind:
		return fixed32(bits.Reverse32(uint32(u))), u <= math.MaxUint32
	case protoreflect.DoubleKind:
		return fixed64(bits.Reverse64(u)), true
	}
	return b, false
}

func zigzag(i int64) uint64   { return uint64(i<<1) ^ uint64(i>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }
