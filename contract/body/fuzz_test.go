package body_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/switchyard-dev/switchyard/contract/body"
)

// chunked returns data in reads of the sizes cuts gives in turn (each 1 to 256 bytes), as a
// network connection delivers a body.
type chunked struct {
	data []byte
	cuts []byte
	i    int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(c.data)
	if len(c.cuts) > 0 {
		n = int(c.cuts[c.i%len(c.cuts)]) + 1
		c.i++
	}
	n = copy(p, c.data[:min(n, len(c.data))])
	c.data = c.data[n:]
	return n, nil
}

// FuzzRead reads fuzzed bodies with fuzzed declared lengths, limits and read sizes, and checks
// the reader against the definition: a body within the limit comes back byte for byte, a longer
// one (or one declared longer) is ErrTooLarge; the buffer never holds more than twice what
// arrived (or the first buffer), its capacity is exactly what the budget holds, and Release gives
// all of it back. The same body appended in the same chunks agrees.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"model":"m","prompt":"hi"}`), int64(27), int64(1<<20), []byte{3, 200})
	f.Add(bytes.Repeat([]byte("a"), 5000), int64(0), int64(4096), []byte{255})
	f.Add(bytes.Repeat([]byte("b"), 9000), int64(100), int64(1<<20), []byte{})
	f.Add([]byte{}, int64(30_000_000), int64(32<<20), []byte{0})
	f.Fuzz(func(t *testing.T, data []byte, declared, limit int64, cuts []byte) {
		if limit <= 0 || limit > 1<<24 {
			limit = 1 << 20
		}
		budget := body.NewBudget(1 << 30)
		o := body.Options{Limit: limit, Declared: declared, Budget: budget}
		b, err := body.Read(&chunked{data: data, cuts: cuts}, o)
		tooLarge := int64(len(data)) > limit || declared > limit
		switch {
		case tooLarge && !errors.Is(err, body.ErrTooLarge):
			t.Fatalf("%d bytes (declared %d, limit %d): err = %v, want ErrTooLarge", len(data), declared, limit, err)
		case !tooLarge && err != nil:
			t.Fatalf("%d bytes (declared %d, limit %d): %v", len(data), declared, limit, err)
		case err != nil:
			if budget.InUse() != 0 {
				t.Fatalf("a refused body holds %d bytes", budget.InUse())
			}
			return
		}
		if !bytes.Equal(b.Bytes(), data) {
			t.Fatalf("read %d bytes, want %d", b.Len(), len(data))
		}
		if bound := max(int64(body.FirstSize), 2*int64(len(data))+2); b.Reserved() > bound || budget.InUse() != b.Reserved() {
			t.Fatalf("%d bytes: capacity %d (budget %d), want at most %d", len(data), b.Reserved(), budget.InUse(), bound)
		}
		b.Release()
		if budget.InUse() != 0 {
			t.Fatalf("after Release: %d in use", budget.InUse())
		}

		var a body.Buffer
		a.Reset(o)
		rest, i := data, 0
		for len(rest) > 0 {
			n := len(rest)
			if len(cuts) > 0 {
				n = min(n, int(cuts[i%len(cuts)])+1)
				i++
			}
			if err := a.Append(rest[:n]); err != nil {
				t.Fatalf("Append after %d bytes: %v", a.Len(), err)
			}
			rest = rest[n:]
		}
		if !bytes.Equal(a.Bytes(), data) || budget.InUse() != a.Reserved() {
			t.Fatalf("appended %d bytes (reserved %d, budget %d), want %d", a.Len(), a.Reserved(), budget.InUse(), len(data))
		}
		a.Release()
	})
}
