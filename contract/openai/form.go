package openai

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/switchyard-dev/switchyard/contract/body"
)

// FormReadAhead is how much of a multipart body ReadForm reads past its model field, for a short
// body to be held whole (and so be sent again should a model server refuse it); a longer one
// streams on from there.
const FormReadAhead = 64 << 10

// Form is a multipart/form-data request body (an audio transcription, say) on its way through
// a front door: the head, read until the model field was known and held in a body.Buffer
// reserved from the in-flight body budget, and the rest, which is not buffered but streams to
// the model server through a reader that goes on checking it (the body limit, one model field,
// the closing boundary). A body whose model field comes first is thus held only up to that
// field, and no body is held beyond the body limit. The methods are safe for concurrent use
// (a transport may still read the body after its answer has begun).
type Form struct {
	// Model is the body's model field.
	Model string

	head     *body.Buffer
	src      io.Reader
	scan     *formScanner
	limit    int64
	read     int64 // bytes read from src in all
	complete bool  // src ended while the head was read: the whole body is the head

	mu      sync.Mutex
	started bool  // a reader has read from the rest
	err     error // the first error of the rest
}

// ReadForm reads a multipart/form-data body from src (contentType is the request's
// Content-Type) until its model field is known and FormReadAhead bytes are in, into a buffer that grows as bytes arrive
// within
// o's limit and budget. It fails with a *FormError (400) for a body that is not
// multipart/form-data, is malformed before its model field, or has none (or two before the
// first ends), with a *body.TooLargeError (413) when the body, declared or read, is over the
// limit, with a *body.BudgetError (503) when the budget is spent, or with src's error wrapped.
// On success the caller sends the body with Open and calls Release when the request is over.
func ReadForm(src io.Reader, contentType string, o body.Options) (*Form, error) {
	boundary, err := FormBoundary(contentType)
	if err != nil {
		return nil, err
	}
	f := &Form{head: &body.Buffer{}, src: src, scan: newFormScanner(boundary), limit: o.Limit}
	f.head.Reset(o)
	for !f.scan.modelKnown() || f.head.Len() < FormReadAhead {
		n, rerr := f.head.ReadOnce(src)
		if werr := f.scan.write(f.head.Bytes()[f.head.Len()-n:]); werr != nil {
			f.head.Release()
			return nil, werr
		}
		if rerr == io.EOF {
			if cerr := f.scan.close(); cerr != nil {
				f.head.Release()
				return nil, cerr
			}
			f.complete = true
			break
		}
		if rerr != nil {
			f.head.Release()
			return nil, rerr
		}
	}
	f.read = int64(f.head.Len())
	f.Model = f.scan.model
	return f, nil
}

// Complete reports whether the whole body was read with the head (a short body): it can then
// be sent any number of times.
func (f *Form) Complete() bool { return f.complete }

// Head is the part of the body held in memory.
func (f *Form) Head() []byte { return f.head.Bytes() }

// Open returns a reader of the whole body for one attempt: the head, then the rest as it
// arrives. ok is false when the body cannot be sent again because an earlier attempt's reader
// has read some of the rest.
func (f *Form) Open() (r io.Reader, ok bool) {
	if f.complete {
		return bytes.NewReader(f.head.Bytes()), true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started {
		return nil, false
	}
	return io.MultiReader(bytes.NewReader(f.head.Bytes()), (*formRest)(f)), true
}

// Err is the first error of the rest of the body (nil while there is none): a *FormError, a
// *body.TooLargeError, or the client's read error wrapped. A front door whose attempt failed
// answers it, as it had answered it had the error come in the head.
func (f *Form) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Release gives back the head's buffer and budget. Call it once, when the request is over.
func (f *Form) Release() { f.head.Release() }

// formRest reads the rest of a Form's body from the client, checking it as it passes. Only the
// one attempt that opened it first reads it (Open refuses the others), so its reads need no
// lock; its error is shared with Err under the Form's lock.
type formRest Form

// Read implements io.Reader: it fails with the body's error instead of passing on a byte past
// the limit, a second model field or a body that ends before its closing boundary.
func (r *formRest) Read(p []byte) (int, error) {
	f := (*Form)(r)
	f.mu.Lock()
	f.started = true
	err := f.err
	f.mu.Unlock()
	if err != nil {
		return 0, err
	}
	n, err := f.src.Read(p)
	f.read += int64(n)
	var bad error
	switch {
	case f.read > f.limit:
		bad = &body.TooLargeError{Limit: f.limit}
	case n > 0 && f.scan.write(p[:n]) != nil:
		bad = f.scan.err
	case err == io.EOF:
		bad = f.scan.close()
	case err != nil:
		bad = fmt.Errorf("read request body: %w", err)
	}
	if bad != nil {
		f.mu.Lock()
		f.err = bad
		f.mu.Unlock()
		return 0, bad
	}
	return n, err
}
