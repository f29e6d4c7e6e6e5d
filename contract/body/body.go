// Package body buffers HTTP request bodies so that a client cannot choose how much memory its
// request takes. A Buffer never allocates from a declared length: it starts small (FirstSize at
// most) and grows geometrically as bytes actually arrive, up to the body limit, so a client that
// declares 30 MB and sends 4 KB holds about 8 KB. Every buffer's capacity is reserved from a
// process-wide Budget as it grows and given back when the request is done; when the budget is
// spent the read fails at once with a *BudgetError instead of adding one more buffer. A body over
// its limit fails with a *TooLargeError.
//
// The edge translates the two: *TooLargeError (errors.Is ErrTooLarge) is a 413, *BudgetError
// (errors.Is ErrBudgetExhausted) a 503 with Retry-After. The package imports only the standard
// library and never logs.
package body

import (
	"fmt"
	"io"
)

// FirstSize is the largest first buffer a Buffer takes: a body declared at most this long
// (minus one byte) is read into one buffer of its exact size, longer or undeclared ones start
// here and double as they fill. It bounds what a connection that declared a large body but
// stalled can make the process hold.
const FirstSize = 4 << 10

// Pool supplies the buffers a Buffer grows into and takes them back (gRPC's mem.BufferPool
// satisfies it). Get returns a buffer of length n, whose capacity may be larger; Put takes back a
// buffer from Get. Implementations must be safe for concurrent use.
type Pool interface {
	Get(n int) *[]byte
	Put(b *[]byte)
}

// Options configure a Buffer.
type Options struct {
	// Limit is the largest body accepted, in bytes; a longer one (declared or read) fails with
	// a *TooLargeError. Required: it must be positive.
	Limit int64
	// Declared is the length the request declared (Content-Length); zero or negative when
	// unknown. It caps how far the buffer grows ahead of the bytes received, never how much it
	// allocates before they arrive. A body longer than declared is still read (up to Limit).
	Declared int64
	// Budget is charged with the buffer's capacity; nil charges nothing.
	Budget *Budget
	// Pool supplies the buffers; nil allocates them (and leaves them to the garbage collector).
	// With a pool, the bytes of Bytes are only valid until Release.
	Pool Pool
}

// Buffer holds one request body while it arrives and for as long as the request needs it. The
// zero value is empty with no limit set: call Reset (or use Read) before appending. A Buffer is
// used by one goroutine at a time; Release gives back its memory and budget.
type Buffer struct {
	opts     Options
	data     []byte
	pooled   *[]byte // the buffer of opts.Pool holding data, nil when data was not from it
	scratch  *[]byte // the buffer of the package's growth pool holding data, if any
	reserved int64   // bytes reserved from opts.Budget
}

// Read reads r to its end into a new Buffer configured by o. On error nothing is held: the
// error is a *TooLargeError, a *BudgetError, or r's read error wrapped.
func Read(r io.Reader, o Options) (*Buffer, error) {
	b := &Buffer{}
	b.Reset(o)
	if _, err := b.ReadFrom(r); err != nil {
		b.recycle() // nobody saw these bytes
		b.Release()
		return nil, err
	}
	return b, nil
}

// Reset releases what b holds and configures it afresh with o.
func (b *Buffer) Reset(o Options) {
	b.Release()
	b.opts = o
}

// Bytes returns the body received so far. It aliases the buffer: valid until the next Append,
// ReadFrom or Release.
func (b *Buffer) Bytes() []byte { return b.data }

// Len is the number of bytes received.
func (b *Buffer) Len() int { return len(b.data) }

// Reserved is the number of bytes b holds from its budget (its capacity).
func (b *Buffer) Reserved() int64 { return b.reserved }

// Append adds p to the body, growing the buffer when p does not fit. It fails with a
// *TooLargeError when the body would exceed the limit and with a *BudgetError when the budget
// cannot cover the growth; the body received so far is kept either way.
func (b *Buffer) Append(p []byte) error {
	need := int64(len(b.data)) + int64(len(p))
	if need > b.opts.Limit {
		return &TooLargeError{Limit: b.opts.Limit}
	}
	if need > int64(cap(b.data)) {
		if err := b.grow(need); err != nil {
			return err
		}
	}
	b.data = append(b.data, p...)
	return nil
}

// Clear empties b but keeps its buffer and the budget it reserved, so that b can collect the
// next piece of the same size without growing again (a meter reusing one buffer for every
// line of a stream). Release gives both back.
func (b *Buffer) Clear() { b.data = b.data[:0] }

// ReadFrom reads r to its end (io.EOF) into the body. It fails with a *TooLargeError as soon as
// more than the limit (or a declared length above it) arrives, with a *BudgetError when the
// budget cannot cover the next growth, and with r's error wrapped; the bytes read stay in b.
func (b *Buffer) ReadFrom(r io.Reader) (int64, error) {
	if b.opts.Declared > b.opts.Limit {
		return 0, &TooLargeError{Limit: b.opts.Limit}
	}
	start := len(b.data)
	for {
		if len(b.data) == cap(b.data) {
			// One byte past the limit fits, so a body of exactly Limit bytes ends with io.EOF
			// and a longer one shows without reading further.
			if err := b.grow(int64(len(b.data)) + 1); err != nil {
				return int64(len(b.data) - start), err
			}
		}
		n, err := r.Read(b.data[len(b.data):cap(b.data)])
		b.data = b.data[:len(b.data)+n]
		if int64(len(b.data)) > b.opts.Limit {
			return int64(len(b.data) - start), &TooLargeError{Limit: b.opts.Limit}
		}
		switch {
		case err == io.EOF:
			return int64(len(b.data) - start), nil
		case err != nil:
			return int64(len(b.data) - start), fmt.Errorf("read request body: %w", err)
		}
	}
}

// ReadOnce makes one Read from r into the body, growing the buffer first when it is full, for a
// reader that looks at a body as it arrives and stops when it has seen enough. It returns the
// bytes added (Bytes()[Len()-n:]) and io.EOF at the body's end; it fails like ReadFrom with a
// *TooLargeError, a *BudgetError or r's error wrapped, keeping the bytes read.
func (b *Buffer) ReadOnce(r io.Reader) (int, error) {
	if b.opts.Declared > b.opts.Limit {
		return 0, &TooLargeError{Limit: b.opts.Limit}
	}
	if len(b.data) == cap(b.data) {
		if err := b.grow(int64(len(b.data)) + 1); err != nil {
			return 0, err
		}
	}
	n, err := r.Read(b.data[len(b.data):cap(b.data)])
	b.data = b.data[:len(b.data)+n]
	switch {
	case int64(len(b.data)) > b.opts.Limit:
		return n, &TooLargeError{Limit: b.opts.Limit}
	case err == io.EOF:
		return n, io.EOF
	case err != nil:
		return n, fmt.Errorf("read request body: %w", err)
	}
	return n, nil
}

// Release gives back the buffer (to Options.Pool, if any) and its budget; b is then empty and
// keeps its options. Releasing an empty Buffer does nothing. Without Options.Pool the memory is
// left to the garbage collector, so bytes of Bytes still referenced elsewhere (a request body an
// HTTP transport may still be writing) stay valid.
func (b *Buffer) Release() {
	if b.pooled != nil {
		b.opts.Pool.Put(b.pooled)
	}
	b.opts.Budget.Release(b.reserved)
	b.data, b.pooled, b.scratch, b.reserved = nil, nil, nil, 0
}

// recycle puts a buffer of the growth pool back; only for a buffer no caller has seen.
func (b *Buffer) recycle() {
	if b.scratch != nil {
		putScratch(b.scratch)
		b.scratch = nil
	}
}

// grow makes room for need bytes (need > cap): it doubles the capacity, starting from FirstSize,
// never beyond the declared length (plus the byte that shows the end) while the body stays
// within it, nor beyond one byte past the limit. The new capacity is reserved before the old one
// is given back.
func (b *Buffer) grow(need int64) error {
	ceiling := b.opts.Limit + 1
	if d := b.opts.Declared; d > 0 && d < b.opts.Limit && need <= d+1 {
		ceiling = d + 1
	}
	size := min(int64(FirstSize), ceiling)
	if c := int64(cap(b.data)); c > 0 {
		size = min(2*c, ceiling)
	}
	size = max(size, need)
	if err := b.opts.Budget.Reserve(size); err != nil {
		return err
	}
	data, pooled, scratch, err := b.alloc(size)
	if err != nil {
		b.opts.Budget.Release(size)
		return err
	}
	data = append(data, b.data...)
	b.recycle() // outgrown: its bytes are copied, and Bytes was valid only until now
	b.Release()
	b.data, b.pooled, b.scratch, b.reserved = data, pooled, scratch, int64(cap(data))
	return nil
}

// alloc returns an empty slice with capacity for size bytes, reserved from the budget already:
// from Options.Pool (a buffer with more capacity reserves the rest too), else from the growth
// pool when size is one of its classes, else newly allocated.
func (b *Buffer) alloc(size int64) (data []byte, pooled, scratch *[]byte, err error) {
	if b.opts.Pool == nil {
		if s := getScratch(size); s != nil {
			return (*s)[:0], nil, s, nil
		}
		return make([]byte, 0, size), nil, nil, nil
	}
	p := b.opts.Pool.Get(int(size))
	if extra := int64(cap(*p)) - size; extra > 0 {
		if err := b.opts.Budget.Reserve(extra); err != nil {
			b.opts.Pool.Put(p)
			return nil, nil, nil, err
		}
	}
	return (*p)[:0], p, nil, nil
}
