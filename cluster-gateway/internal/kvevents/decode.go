package kvevents

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Kind is an event's type.
type Kind uint8

// The event kinds, vLLM's tags.
const (
	KindStored  Kind = iota + 1 // BlockStored
	KindRemoved                 // BlockRemoved
	KindCleared                 // AllBlocksCleared
)

// The tags of vLLM's tagged-union events.
const (
	tagStored  = "BlockStored"
	tagRemoved = "BlockRemoved"
	tagCleared = "AllBlocksCleared"
)

// Event is one decoded KV cache event. Hashes alias the Batch's storage.
type Event struct {
	Kind Kind
	// Hashes are the event's block hashes (BlockStored, BlockRemoved), as the engine reports
	// them: an integer, or the last 8 bytes (big-endian) of a byte-string hash, which is how
	// vLLM turns its hashes into integers.
	Hashes []uint64
	// Parent is BlockStored's parent_block_hash; HasParent is false when it is nil.
	Parent    uint64
	HasParent bool
	// Tokens is the number of token ids BlockStored carries; BlockSize its block_size.
	Tokens, BlockSize int

	off, n int // where Hashes lie in the Batch's storage while it grows
}

// Batch is one decoded KVEventBatch. Decode reuses its storage.
type Batch struct {
	// TS is the batch's timestamp (seconds since the epoch, as the engine wrote it).
	TS float64
	// Rank is the data_parallel_rank, or -1 when absent.
	Rank int64
	// Events are the known events in order.
	Events []Event
	// Unknown counts the events whose tag is not known; they are skipped.
	Unknown int

	hashes []uint64
}

// Limits bound what one payload may hold.
type Limits struct {
	// MaxEvents bounds the events of a batch; MaxHashes the hashes of an event (and its token
	// ids, 64 a block).
	MaxEvents, MaxHashes int
}

// maxDepth bounds the nesting of values skipped inside unknown events or unknown trailing fields.
const maxDepth = 16

// ErrMalformed wraps every reason a payload is refused.
var ErrMalformed = errors.New("kvevents: malformed event batch")

// Decoder decodes KVEventBatch payloads. It is not safe for concurrent use; reuse one per
// goroutine.
type Decoder struct {
	lim Limits
	r   bytes.Reader
	dec *msgpack.Decoder
	tag [32]byte
	hb  [64]byte
}

// NewDecoder returns a Decoder that enforces lim.
func NewDecoder(lim Limits) *Decoder {
	d := &Decoder{lim: lim}
	d.dec = msgpack.NewDecoder(&d.r)
	return d
}

// Decode decodes payload into b. On error b holds no events and nothing of the payload should
// be applied: a batch is taken whole or not at all.
func (d *Decoder) Decode(payload []byte, b *Batch) error {
	b.TS, b.Rank, b.Events, b.Unknown, b.hashes = 0, -1, b.Events[:0], 0, b.hashes[:0]
	d.r.Reset(payload)
	d.dec.ResetReader(&d.r)
	if err := d.batch(b); err != nil {
		b.Events, b.Unknown = b.Events[:0], 0
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if d.r.Len() != 0 {
		b.Events, b.Unknown = b.Events[:0], 0
		return fmt.Errorf("%w: %d bytes after the batch", ErrMalformed, d.r.Len())
	}
	return nil
}

func (d *Decoder) batch(b *Batch) error {
	n, err := d.dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n < 2 || n > 3 {
		return fmt.Errorf("batch has %d fields, want 2 or 3", n)
	}
	if b.TS, err = d.dec.DecodeFloat64(); err != nil {
		return fmt.Errorf("ts: %w", err)
	}
	if err := d.events(b); err != nil {
		return err
	}
	if n == 3 {
		return d.rank(b)
	}
	return nil
}

func (d *Decoder) rank(b *Batch) error {
	c, err := d.dec.PeekCode()
	if err != nil {
		return err
	}
	if c == msgpcode.Nil {
		return d.dec.DecodeNil()
	}
	if b.Rank, err = d.dec.DecodeInt64(); err != nil {
		return fmt.Errorf("data_parallel_rank: %w", err)
	}
	return nil
}

func (d *Decoder) events(b *Batch) error {
	n, err := d.dec.DecodeArrayLen()
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	if n < 0 || n > d.lim.MaxEvents {
		return fmt.Errorf("batch has %d events, limit %d", n, d.lim.MaxEvents)
	}
	for i := range n {
		if err := d.event(b); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
	}
	// The hashes of all events share one slice; point each event into it now it stopped growing.
	for i := range b.Events {
		e := &b.Events[i]
		e.Hashes = b.hashes[e.off : e.off+e.n : e.off+e.n]
	}
	return nil
}

// event decodes one tagged event, appending it to b (or counting it unknown).
func (d *Decoder) event(b *Batch) error {
	n, err := d.dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n < 1 {
		return errors.New("event is not a tagged array")
	}
	kind, err := d.readTag()
	if err != nil {
		return err
	}
	ev := Event{Kind: kind, off: len(b.hashes)}
	var need int // fields the kind requires after the tag
	switch kind {
	case KindStored:
		need = 4
	case KindRemoved:
		need = 1
	case KindCleared:
	default:
		b.Unknown++
		return d.skipN(n-1, 0)
	}
	tag := kind.String()
	if n-1 < need {
		return fmt.Errorf("%s has %d fields, want at least %d", tag, n-1, need)
	}
	switch ev.Kind {
	case KindStored:
		err = d.stored(b, &ev)
	case KindRemoved:
		err = d.hashList(b, &ev)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", tag, err)
	}
	ev.n = len(b.hashes) - ev.off
	b.Events = append(b.Events, ev)
	return d.skipN(n-1-need, 0) // lora_id, medium, lora_name and any later field
}

// readTag reads the event's tag without allocating; 0 for a tag it does not know.
func (d *Decoder) readTag() (Kind, error) {
	c, err := d.dec.PeekCode()
	if err != nil {
		return 0, err
	}
	if !msgpcode.IsString(c) {
		return 0, fmt.Errorf("event tag has code %#x, want a string", c)
	}
	l, err := d.dec.DecodeBytesLen()
	if err != nil {
		return 0, err
	}
	if l > len(d.tag) {
		return 0, d.skipBytes(l) // too long to be one of ours
	}
	if err := d.dec.ReadFull(d.tag[:l]); err != nil {
		return 0, err
	}
	switch string(d.tag[:l]) {
	case tagStored:
		return KindStored, nil
	case tagRemoved:
		return KindRemoved, nil
	case tagCleared:
		return KindCleared, nil
	}
	return 0, nil
}

// String returns the kind's vLLM tag.
func (k Kind) String() string {
	switch k {
	case KindStored:
		return tagStored
	case KindRemoved:
		return tagRemoved
	case KindCleared:
		return tagCleared
	}
	return "unknown"
}

func (d *Decoder) skipBytes(l int) error {
	for l > 0 {
		k := min(l, len(d.hb))
		if err := d.dec.ReadFull(d.hb[:k]); err != nil {
			return err
		}
		l -= k
	}
	return nil
}

// stored decodes BlockStored's block_hashes, parent_block_hash, token_ids and block_size.
func (d *Decoder) stored(b *Batch, ev *Event) error {
	if err := d.hashList(b, ev); err != nil {
		return err
	}
	c, err := d.dec.PeekCode()
	if err != nil {
		return err
	}
	if c == msgpcode.Nil {
		err = d.dec.DecodeNil()
	} else {
		ev.Parent, err = d.hash()
		ev.HasParent = true
	}
	if err != nil {
		return fmt.Errorf("parent_block_hash: %w", err)
	}
	if ev.Tokens, err = d.tokens(); err != nil {
		return fmt.Errorf("token_ids: %w", err)
	}
	bs, err := d.dec.DecodeInt64()
	if err != nil {
		return fmt.Errorf("block_size: %w", err)
	}
	if bs < 1 || bs > 1<<16 {
		return fmt.Errorf("block_size %d out of range", bs)
	}
	ev.BlockSize = int(bs)
	return nil
}

func (d *Decoder) hashList(b *Batch, ev *Event) error {
	n, err := d.dec.DecodeArrayLen()
	if err != nil {
		return fmt.Errorf("block_hashes: %w", err)
	}
	if n < 0 || n > d.lim.MaxHashes {
		return fmt.Errorf("%d block hashes, limit %d", n, d.lim.MaxHashes)
	}
	for range n {
		h, err := d.hash()
		if err != nil {
			return fmt.Errorf("block_hashes: %w", err)
		}
		b.hashes = append(b.hashes, h)
	}
	return nil
}

// hash reads a block hash: an integer, or bytes of which the last 8 are the integer.
func (d *Decoder) hash() (uint64, error) {
	c, err := d.dec.PeekCode()
	if err != nil {
		return 0, err
	}
	if !msgpcode.IsBin(c) && !msgpcode.IsString(c) {
		return d.dec.DecodeUint64()
	}
	l, err := d.dec.DecodeBytesLen()
	if err != nil {
		return 0, err
	}
	if l < 1 || l > len(d.hb) {
		return 0, fmt.Errorf("hash of %d bytes, want 1 to %d", l, len(d.hb))
	}
	if err := d.dec.ReadFull(d.hb[:l]); err != nil {
		return 0, err
	}
	var v [8]byte
	copy(v[8-min(l, 8):], d.hb[max(0, l-8):l])
	return binary.BigEndian.Uint64(v[:]), nil
}

func (d *Decoder) tokens() (int, error) {
	n, err := d.dec.DecodeArrayLen()
	if err != nil {
		return 0, err
	}
	if n < 0 || n > d.lim.MaxHashes*64 {
		return 0, fmt.Errorf("%d token ids, limit %d", n, d.lim.MaxHashes*64)
	}
	for range n {
		if _, err := d.dec.DecodeInt64(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// skipN skips n values, refusing containers nested deeper than maxDepth.
func (d *Decoder) skipN(n, depth int) error {
	for range n {
		if err := d.skip(depth); err != nil {
			return err
		}
	}
	return nil
}

func (d *Decoder) skip(depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("values nested deeper than %d", maxDepth)
	}
	c, err := d.dec.PeekCode()
	if err != nil {
		return err
	}
	switch {
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n, err := d.dec.DecodeArrayLen()
		if err != nil {
			return err
		}
		return d.skipN(n, depth+1)
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		n, err := d.dec.DecodeMapLen()
		if err != nil {
			return err
		}
		return d.skipN(2*n, depth+1)
	case msgpcode.IsString(c) || msgpcode.IsBin(c):
		l, err := d.dec.DecodeBytesLen()
		if err != nil {
			return err
		}
		return d.skipBytes(l)
	}
	return d.dec.Skip() // a scalar or an extension: no nesting
}
