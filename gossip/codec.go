package gossip

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/protobuf/proto"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Wire format (see docs/gossip.md). Every gossip user message starts with a type byte:
//
//	chunk:  0x01 | uvarint len(node) | node | uvarint sequence | uvarint index | uvarint count | payload
//	state:  0x02 | blob                      (push/pull anti-entropy)
//	leave:  0x03 | uvarint len(node) | node | uvarint sequence   (graceful departure)
//
// A summary is encoded as a blob and cut into chunk payloads of at most one packet each; the
// concatenated payloads of chunks 0..count-1 are the blob. A blob is a codec byte followed by a
// protobuf message: 0x00 raw, 0x01 DEFLATE-compressed (whichever is smaller).
const (
	msgChunk byte = 0x01
	msgState byte = 0x02
	msgLeave byte = 0x03

	codecRaw     byte = 0x00
	codecDeflate byte = 0x01

	// MaxChunks is the most chunks one summary may be cut into.
	MaxChunks = 255
	// maxNodeName bounds node names on the wire (memberlist itself has no limit).
	maxNodeName = 255
)

// ErrMalformed reports gossip bytes that cannot be decoded.
var ErrMalformed = errors.New("gossip: malformed message")

var (
	deflaters = sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.BestCompression)
		return w
	}}
	inflaters = sync.Pool{New: func() any { return flate.NewReader(nil) }}
)

// encodeBlob marshals m and compresses it when that makes it smaller.
func encodeBlob(m proto.Message) ([]byte, error) {
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("gossip: marshal: %w", err)
	}
	var buf bytes.Buffer
	buf.Grow(len(raw)/2 + 16)
	buf.WriteByte(codecDeflate)
	w := deflaters.Get().(*flate.Writer)
	w.Reset(&buf)
	_, _ = w.Write(raw)
	_ = w.Close()
	deflaters.Put(w)
	if buf.Len() < len(raw)+1 {
		return buf.Bytes(), nil
	}
	return append([]byte{codecRaw}, raw...), nil
}

// decodeBlob decompresses (up to limit bytes) and unmarshals a blob into m.
func decodeBlob(b []byte, m proto.Message, limit int) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty blob", ErrMalformed)
	}
	raw := b[1:]
	switch b[0] {
	case codecRaw:
		if len(raw) > limit {
			return fmt.Errorf("%w: %d bytes, limit %d", ErrMalformed, len(raw), limit)
		}
	case codecDeflate:
		var err error
		if raw, err = inflate(raw, limit); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: codec %d", ErrMalformed, b[0])
	}
	if err := proto.Unmarshal(raw, m); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return nil
}

func inflate(b []byte, limit int) ([]byte, error) {
	r := inflaters.Get().(io.ReadCloser)
	defer inflaters.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(b), nil); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: inflate: %v", ErrMalformed, err)
	}
	if len(out) > limit {
		return nil, fmt.Errorf("%w: inflates beyond %d bytes", ErrMalformed, limit)
	}
	return out, nil
}

// EncodeSummary encodes a summary as a blob (codec byte + protobuf), compressed when smaller.
func EncodeSummary(s *gossipv1.CapacitySummary) ([]byte, error) {
	return encodeBlob(s)
}

// DecodeSummary decodes a blob made by EncodeSummary, refusing anything that inflates beyond limit
// bytes or lacks the node name and sequence.
func DecodeSummary(b []byte, limit int) (*gossipv1.CapacitySummary, error) {
	s := new(gossipv1.CapacitySummary)
	if err := decodeBlob(b, s, limit); err != nil {
		return nil, err
	}
	if err := checkSummary(s); err != nil {
		return nil, err
	}
	return s, nil
}

func checkSummary(s *gossipv1.CapacitySummary) error {
	if s.GetNode() == "" || len(s.GetNode()) > maxNodeName || s.GetSequence() == 0 {
		return fmt.Errorf("%w: summary without node name or sequence", ErrMalformed)
	}
	return nil
}

// chunk is one piece of an encoded summary.
type chunk struct {
	node    string
	seq     uint64
	index   int
	count   int
	payload []byte
}

// encodeChunks cuts blob into chunk messages of at most maxMsg bytes each.
func encodeChunks(node string, seq uint64, blob []byte, maxMsg int) ([][]byte, error) {
	header := 1 + binary.MaxVarintLen64*4 + len(node)
	room := maxMsg - header
	if room < 64 {
		return nil, fmt.Errorf("gossip: packet budget %d too small for node name %q", maxMsg, node)
	}
	count := (len(blob) + room - 1) / room
	if count > MaxChunks {
		return nil, fmt.Errorf("gossip: summary of %d bytes needs %d chunks, limit %d", len(blob), count, MaxChunks)
	}
	msgs := make([][]byte, 0, count)
	for i := 0; i < count; i++ {
		part := blob[i*room : min((i+1)*room, len(blob))]
		m := make([]byte, 0, header+len(part))
		m = append(m, msgChunk)
		m = binary.AppendUvarint(m, uint64(len(node)))
		m = append(m, node...)
		m = binary.AppendUvarint(m, seq)
		m = binary.AppendUvarint(m, uint64(i))
		m = binary.AppendUvarint(m, uint64(count))
		msgs = append(msgs, append(m, part...))
	}
	return msgs, nil
}

// decodeChunk parses a chunk message (type byte included). The payload aliases b.
func decodeChunk(b []byte) (chunk, error) {
	if len(b) < 1 || b[0] != msgChunk {
		return chunk{}, fmt.Errorf("%w: not a chunk", ErrMalformed)
	}
	r := b[1:]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(r)
		if n <= 0 {
			return 0, false
		}
		r = r[n:]
		return v, true
	}
	nameLen, ok := next()
	if !ok || nameLen == 0 || nameLen > maxNodeName || nameLen > uint64(len(r)) {
		return chunk{}, fmt.Errorf("%w: chunk node name", ErrMalformed)
	}
	c := chunk{node: string(r[:nameLen])}
	r = r[nameLen:]
	seq, ok1 := next()
	idx, ok2 := next()
	count, ok3 := next()
	if !ok1 || !ok2 || !ok3 || seq == 0 || count == 0 || count > MaxChunks || idx >= count {
		return chunk{}, fmt.Errorf("%w: chunk header", ErrMalformed)
	}
	c.seq, c.index, c.count, c.payload = seq, int(idx), int(count), r
	return c, nil
}

// encodeState encodes the push/pull state message.
func encodeState(summaries []*gossipv1.CapacitySummary) ([]byte, error) {
	blob, err := encodeBlob(&gossipv1.NodeState{Summaries: summaries})
	if err != nil {
		return nil, err
	}
	return append([]byte{msgState}, blob...), nil
}

// decodeState decodes a push/pull state message; summaries without node or sequence are dropped.
func decodeState(b []byte, limit int) ([]*gossipv1.CapacitySummary, error) {
	if len(b) < 1 || b[0] != msgState {
		return nil, fmt.Errorf("%w: not a state message", ErrMalformed)
	}
	var st gossipv1.NodeState
	if err := decodeBlob(b[1:], &st, limit); err != nil {
		return nil, err
	}
	out := st.GetSummaries()[:0]
	for _, s := range st.GetSummaries() {
		if checkSummary(s) == nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// encodeLeave encodes the message a node gossips when it leaves gracefully; seq is above every
// summary sequence it published, so a later incarnation's summaries supersede it.
func encodeLeave(node string, seq uint64) []byte {
	m := append([]byte{msgLeave}, binary.AppendUvarint(nil, uint64(len(node)))...)
	m = append(m, node...)
	return binary.AppendUvarint(m, seq)
}

// decodeLeave parses a leave message.
func decodeLeave(b []byte) (node string, seq uint64, err error) {
	if len(b) < 1 || b[0] != msgLeave {
		return "", 0, fmt.Errorf("%w: not a leave message", ErrMalformed)
	}
	r := b[1:]
	l, n := binary.Uvarint(r)
	if n <= 0 || l == 0 || l > maxNodeName || l > uint64(len(r)-n) {
		return "", 0, fmt.Errorf("%w: leave node name", ErrMalformed)
	}
	node, r = string(r[n:n+int(l)]), r[n+int(l):]
	seq, n = binary.Uvarint(r)
	if n <= 0 || n != len(r) {
		return "", 0, fmt.Errorf("%w: leave sequence", ErrMalformed)
	}
	return node, seq, nil
}
