package gossip

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Wire format (see docs/gossip.md). Every gossip user message starts with a type byte:
//
//	chunk:  0x01 | uvarint len(node) | node | uvarint sequence | uvarint index | uvarint count | payload
//	state:  0x02 | blob                      (push/pull anti-entropy)
//	leave:  0x03 | uvarint len(node) | node | uvarint sequence   (graceful departure)
//	delta:  0x04 | same layout as chunk      (payloads form a SummaryDelta blob)
//	want:   0x05 | uvarint len(node) | node  (sent to a publisher: "send a full summary")
//	linked chunk: 0x06 | chunk header | 16-byte head | 16-byte link | payload   (count ≥ 2)
//	linked delta: 0x07 | same layout as a linked chunk
//	digest: 0x08 | same layout as chunk, node = the aggregator   (payloads form a RegionDigest blob)
//	linked digest: 0x09 | same layout as a linked chunk
//
// A summary (or delta) is encoded as a blob and cut into chunk payloads of at most one packet
// each; the concatenated payloads of chunks 0..count-1 are the blob. A blob is a codec byte
// followed by a protobuf message: 0x00 raw, 0x01 DEFLATE-compressed (whichever is smaller).
// Nodes that predate deltas count 0x04 and 0x05 as undecodable and drop them. A summary or delta
// of two chunks or more travels as linked chunks while every member reads them (see chain.go):
// each chunk's link is the digest of the next chunk, the head the digest of the first, so a
// receiver checks every chunk as it arrives and a forged chunk cannot take a genuine one's place.
const (
	msgChunk       byte = 0x01
	msgState       byte = 0x02
	msgLeave       byte = 0x03
	msgDelta       byte = 0x04
	msgWantFull    byte = 0x05
	msgLinked      byte = 0x06
	msgLinkedDelta byte = 0x07
	// msgDigest and msgLinkedDigest carry region digests (digest.go); nodes that predate them
	// count them as undecodable and drop them.
	msgDigest       byte = 0x08
	msgLinkedDigest byte = 0x09

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
	inflaters = sync.Pool{New: func() any { return &inflater{r: flate.NewReader(nil)} }}
	// inflated holds decompressed blobs until they are unmarshalled (which copies what it keeps).
	inflated = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

// pooling is false in builds with the nopool tag (nopool.go), which bypass the package's pools
// so that benchmarks can measure what they save.
var pooling = true

// getDeflater returns a DEFLATE writer at best compression writing to w.
func getDeflater(w io.Writer) *flate.Writer {
	if !pooling {
		d, _ := flate.NewWriter(w, flate.BestCompression)
		return d
	}
	d := deflaters.Get().(*flate.Writer)
	d.Reset(w)
	return d
}

func getInflated() *bytes.Buffer {
	if !pooling {
		return new(bytes.Buffer)
	}
	return inflated.Get().(*bytes.Buffer)
}

func getInflater() *inflater {
	if !pooling {
		return inflaters.New().(*inflater)
	}
	return inflaters.Get().(*inflater)
}

// inflater is a reusable DEFLATE reader with its source and limit, so that inflating allocates
// nothing once warm.
type inflater struct {
	r     io.ReadCloser
	src   bytes.Reader
	limit io.LimitedReader
}

// maxPooledBuffer bounds the buffers kept for reuse, so that one huge state message does not pin
// its memory.
const maxPooledBuffer = 256 << 10

// encodeBlob marshals m and compresses it when that makes it smaller.
func encodeBlob(m proto.Message) ([]byte, error) {
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("gossip: marshal: %w", err)
	}
	return compressBlob(raw), nil
}

// compressBlob returns the blob of a marshalled message: DEFLATE-compressed when that is smaller.
func compressBlob(raw []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(raw)/2 + 16)
	buf.WriteByte(codecDeflate)
	w := getDeflater(&buf)
	_, _ = w.Write(raw)
	_ = w.Close()
	if pooling {
		deflaters.Put(w)
	}
	if buf.Len() < len(raw)+1 {
		return buf.Bytes()
	}
	return append([]byte{codecRaw}, raw...)
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
		buf := getInflated()
		defer func() {
			if pooling && buf.Cap() <= maxPooledBuffer {
				inflated.Put(buf)
			}
		}()
		buf.Reset()
		if err := inflate(buf, raw, limit); err != nil {
			return err
		}
		raw = buf.Bytes()
	default:
		return fmt.Errorf("%w: codec %d", ErrMalformed, b[0])
	}
	if err := proto.Unmarshal(raw, m); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return nil
}

// inflate decompresses b into buf, refusing more than limit bytes.
func inflate(buf *bytes.Buffer, b []byte, limit int) error {
	in := getInflater()
	if pooling {
		defer inflaters.Put(in)
	}
	in.src.Reset(b)
	if err := in.r.(flate.Resetter).Reset(&in.src, nil); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	in.limit = io.LimitedReader{R: in.r, N: int64(limit) + 1}
	buf.Grow(min(4*len(b), limit+1))
	if _, err := buf.ReadFrom(&in.limit); err != nil {
		return fmt.Errorf("%w: inflate: %v", ErrMalformed, err)
	}
	if buf.Len() > limit {
		return fmt.Errorf("%w: inflates beyond %d bytes", ErrMalformed, limit)
	}
	return nil
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

// chunk is one piece of an encoded summary or delta.
type chunk struct {
	node  string
	seq   uint64
	index int
	count int
	delta bool // the payloads form a SummaryDelta blob
	// regional is set on digest chunks: the payloads form a RegionDigest blob.
	regional bool
	payload  []byte
	// linked chunks (msgLinked, msgLinkedDelta) carry the digest of the first chunk (head, the
	// same in every chunk of one message) and of the next chunk (link; zero in the last).
	linked     bool
	head, link digest
}

// encodeChunks cuts a summary blob into chunk messages of at most maxMsg bytes each.
func encodeChunks(node string, seq uint64, blob []byte, maxMsg int) ([][]byte, error) {
	return encodeParts(msgChunk, node, seq, blob, maxMsg, false)
}

// encodeParts cuts blob into messages of type kind (msgChunk or msgDelta) of at most maxMsg
// bytes. With linked, a blob that needs two chunks or more is cut into linked chunks
// (msgLinked or msgLinkedDelta); one chunk is always sent as kind.
func encodeParts(kind byte, node string, seq uint64, blob []byte, maxMsg int, linked bool) ([][]byte, error) {
	header := 1 + binary.MaxVarintLen64*4 + len(node)
	room := maxMsg - header
	if room < 64 {
		return nil, fmt.Errorf("gossip: packet budget %d too small for node name %q", maxMsg, node)
	}
	if linked && len(blob) > room {
		header += 2 * digestSize
		room -= 2 * digestSize
		kind = map[byte]byte{msgChunk: msgLinked, msgDelta: msgLinkedDelta, msgDigest: msgLinkedDigest}[kind]
	} else {
		linked = false
	}
	count := (len(blob) + room - 1) / room
	if count > MaxChunks {
		return nil, fmt.Errorf("gossip: summary of %d bytes needs %d chunks, limit %d", len(blob), count, MaxChunks)
	}
	parts := make([][]byte, count)
	for i := range parts {
		parts[i] = blob[i*room : min((i+1)*room, len(blob))]
	}
	var digests []digest
	if linked {
		digests = chainDigests(node, seq, parts)
	}
	msgs := make([][]byte, 0, count)
	for i, part := range parts {
		m := make([]byte, 0, header+len(part))
		m = append(m, kind)
		m = binary.AppendUvarint(m, uint64(len(node)))
		m = append(m, node...)
		m = binary.AppendUvarint(m, seq)
		m = binary.AppendUvarint(m, uint64(i))
		m = binary.AppendUvarint(m, uint64(count))
		if linked {
			var next digest
			if i+1 < count {
				next = digests[i+1]
			}
			m = append(m, digests[0][:]...)
			m = append(m, next[:]...)
		}
		msgs = append(msgs, append(m, part...))
	}
	return msgs, nil
}

// isChunk reports whether a message type is one of the chunk types (summaries, deltas, digests).
func isChunk(kind byte) bool {
	return kind == msgChunk || kind == msgDelta || kind == msgLinked || kind == msgLinkedDelta ||
		kind == msgDigest || kind == msgLinkedDigest
}

// decodeChunk parses a chunk or delta message, linked or not (type byte included). The payload
// aliases b.
func decodeChunk(b []byte) (chunk, error) {
	if len(b) < 1 || !isChunk(b[0]) {
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
	c := chunk{node: string(r[:nameLen]), delta: b[0] == msgDelta || b[0] == msgLinkedDelta,
		linked:   b[0] == msgLinked || b[0] == msgLinkedDelta || b[0] == msgLinkedDigest,
		regional: b[0] == msgDigest || b[0] == msgLinkedDigest}
	r = r[nameLen:]
	seq, ok1 := next()
	idx, ok2 := next()
	count, ok3 := next()
	if !ok1 || !ok2 || !ok3 || seq == 0 || count == 0 || count > MaxChunks || idx >= count {
		return chunk{}, fmt.Errorf("%w: chunk header", ErrMalformed)
	}
	if c.linked {
		if count < 2 || len(r) < 2*digestSize {
			return chunk{}, fmt.Errorf("%w: linked chunk header", ErrMalformed)
		}
		copy(c.head[:], r)
		copy(c.link[:], r[digestSize:])
		r = r[2*digestSize:]
		if (idx+1 == count) != c.link.zero() {
			return chunk{}, fmt.Errorf("%w: linked chunk %d of %d with a link of the wrong kind", ErrMalformed, idx, count)
		}
	}
	c.seq, c.index, c.count, c.payload = seq, int(idx), int(count), r
	return c, nil
}

// encodeState encodes the push/pull state message: a NodeState whose bases are interleaved with
// the summaries on the wire (each right after its node's summary), so that DEFLATE, whose window
// is 32 KiB, finds a base's repetition of its summary.
func encodeState(held []heldSummary) ([]byte, error) { return encodeStateWith(held, nil) }

// encodeStateWith is encodeState with region digest messages (NodeState.digests) after the
// summaries.
func encodeStateWith(held []heldSummary, digests [][]byte) ([]byte, error) {
	opts := proto.MarshalOptions{Deterministic: true}
	var raw []byte
	for _, h := range held {
		for field, s := range []*gossipv1.CapacitySummary{h.summary, h.base} {
			if s == nil {
				continue
			}
			raw = protowire.AppendTag(raw, protowire.Number(field+1), protowire.BytesType)
			raw = protowire.AppendVarint(raw, uint64(opts.Size(s)))
			var err error
			if raw, err = opts.MarshalAppend(raw, s); err != nil {
				return nil, fmt.Errorf("gossip: marshal state: %w", err)
			}
		}
	}
	for _, d := range digests {
		raw = protowire.AppendTag(raw, stateDigestsField, protowire.BytesType)
		raw = protowire.AppendBytes(raw, d)
	}
	return append([]byte{msgState}, compressBlob(raw)...), nil
}

// decodeState decodes a push/pull state message into the newest summary of each node and, when
// it was rebuilt from a delta, its base. Summaries without node or sequence are dropped, and so
// are bases without a summary of their node or not older than it.
func decodeState(b []byte, limit int) ([]heldSummary, error) {
	held, _, err := decodeStateWith(b, limit)
	return held, err
}

// stateDigestsField is NodeState.digests' field number.
var stateDigestsField = (&gossipv1.NodeState{}).ProtoReflect().Descriptor().Fields().ByName("digests").Number()

// decodeStateWith is decodeState that also returns the state's region digest messages (each
// still to be decoded and checked).
func decodeStateWith(b []byte, limit int) ([]heldSummary, [][]byte, error) {
	if len(b) < 1 || b[0] != msgState {
		return nil, nil, fmt.Errorf("%w: not a state message", ErrMalformed)
	}
	var st gossipv1.NodeState
	if err := decodeBlob(b[1:], &st, limit); err != nil {
		return nil, nil, err
	}
	bases := make(map[string]*gossipv1.CapacitySummary, len(st.GetBases()))
	for _, s := range st.GetBases() {
		if checkSummary(s) == nil {
			bases[s.GetNode()] = s
		}
	}
	out := make([]heldSummary, 0, len(st.GetSummaries()))
	for _, s := range st.GetSummaries() {
		if checkSummary(s) != nil {
			continue
		}
		h := heldSummary{summary: s}
		if b := bases[s.GetNode()]; b != nil && b.GetSequence() < s.GetSequence() {
			h.base = b
		}
		out = append(out, h)
	}
	return out, st.GetDigests(), nil
}

// encodeDelta encodes a delta as a blob, compressed when smaller, with the compact header: the
// node name and sequence are left to the chunk header (encodeParts), the base sequence and the
// generation time are given relative to the sequence.
func encodeDelta(d *gossipv1.SummaryDelta) ([]byte, error) {
	if d.GetBaseSequence() == 0 || d.GetSequence() <= d.GetBaseSequence() {
		return nil, fmt.Errorf("gossip: delta %d against base %d", d.GetSequence(), d.GetBaseSequence())
	}
	return encodeBlob(&gossipv1.SummaryDelta{
		Models: d.GetModels(), PrefixSketch: d.GetPrefixSketch(), PrefixSketchRemoved: d.GetPrefixSketchRemoved(),
		Signature:         d.GetSignature(),
		BaseDistance:      d.GetSequence() - d.GetBaseSequence(),
		GeneratedAtOffset: int64(uint64(d.GetGeneratedAtUnixNano()) - d.GetSequence()), // wraps back in decodeDelta
	})
}

// decodeDelta decodes a delta blob that arrived in chunks of node's sequence seq, refusing
// anything that inflates beyond limit bytes. It accepts both headers (see SummaryDelta) and
// returns the delta with the long one: node name, sequence, a base sequence below it, and the
// generation time. A long header must name node and seq; a compact one must not set any long field.
func decodeDelta(b []byte, node string, seq uint64, limit int) (*gossipv1.SummaryDelta, error) {
	d := new(gossipv1.SummaryDelta)
	if err := decodeBlob(b, d, limit); err != nil {
		return nil, err
	}
	long := d.GetNode() != "" || d.GetSequence() != 0 || d.GetBaseSequence() != 0 || d.GetGeneratedAtUnixNano() != 0
	switch {
	case d.GetBaseDistance() != 0 && !long && d.GetBaseDistance() < seq:
		d.Node, d.Sequence, d.BaseSequence = node, seq, seq-d.GetBaseDistance()
		d.GeneratedAtUnixNano = int64(seq + uint64(d.GetGeneratedAtOffset()))
		d.BaseDistance, d.GeneratedAtOffset = 0, 0
	case d.GetBaseDistance() != 0 || d.GetGeneratedAtOffset() != 0:
		return nil, fmt.Errorf("%w: delta header both compact and long, or base not above zero", ErrMalformed)
	case d.GetNode() != node || d.GetSequence() != seq:
		return nil, fmt.Errorf(
			"%w: chunk header says %s/%d, delta %s/%d",
			ErrMalformed,
			node,
			seq,
			d.GetNode(),
			d.GetSequence(),
		)
	}
	if d.GetNode() == "" || len(d.GetNode()) > maxNodeName || d.GetBaseSequence() == 0 ||
		d.GetSequence() <= d.GetBaseSequence() {
		return nil, fmt.Errorf("%w: delta without node name, or sequence not above its base", ErrMalformed)
	}
	return d, nil
}

// encodeWantFull encodes a request to node for a full summary.
func encodeWantFull(node string) []byte {
	m := append([]byte{msgWantFull}, binary.AppendUvarint(nil, uint64(len(node)))...)
	return append(m, node...)
}

// decodeWantFull parses a full-summary request and returns the node it is addressed to.
func decodeWantFull(b []byte) (string, error) {
	if len(b) < 1 || b[0] != msgWantFull {
		return "", fmt.Errorf("%w: not a full-summary request", ErrMalformed)
	}
	l, n := binary.Uvarint(b[1:])
	if n <= 0 || l == 0 || l > maxNodeName || l != uint64(len(b)-1-n) {
		return "", fmt.Errorf("%w: full-summary request node name", ErrMalformed)
	}
	return string(b[1+n:]), nil
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
