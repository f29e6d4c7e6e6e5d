package body_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/switchyard-dev/switchyard/contract/body"
)

// stalled returns the first n bytes of a body and then fails, as a read cut off by its deadline
// after a client stopped sending.
func stalled(n int) io.Reader {
	return io.MultiReader(bytes.NewReader(bytes.Repeat([]byte{'x'}, n)), iotest.ErrReader(errStalled))
}

var errStalled = errors.New("stalled")

func TestRead(t *testing.T) {
	const limit = 1 << 20
	for _, tc := range []struct {
		name     string
		size     int   // bytes sent
		declared int64 // Content-Length (0: unknown)
		limit    int64
		wantErr  error
		maxCap   int64 // the largest capacity the buffer may have reached
	}{
		{"empty", 0, 0, limit, nil, body.FirstSize},
		{"small declared", 100, 100, limit, nil, 101},
		{"declared first size", body.FirstSize, body.FirstSize, limit, nil, body.FirstSize + 1},
		{"small unknown", 100, 0, limit, nil, body.FirstSize},
		{"large declared", 100_000, 100_000, limit, nil, 100_001},
		{"large unknown", 100_000, 0, limit, nil, 2 * 100_000},
		{"longer than declared", 10_000, 5_000, limit, nil, 2 * 10_000},
		{"exactly the limit", limit, limit, limit, nil, limit + 1},
		{"exactly the limit unknown", limit, 0, limit, nil, limit + 1},
		{"over the limit", limit + 1, 0, limit, body.ErrTooLarge, limit + 1},
		{"declared over the limit", 10, limit + 1, limit, body.ErrTooLarge, 0},
		{"over the limit, declared under", limit + 5, 100, limit, body.ErrTooLarge, limit + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Repeat([]byte("0123456789"), tc.size/10+1)[:tc.size]
			budget := body.NewBudget(1 << 30)
			b, err := body.Read(
				iotest.HalfReader(bytes.NewReader(data)),
				body.Options{Limit: tc.limit, Declared: tc.declared, Budget: budget},
			)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if budget.InUse() != 0 {
					t.Fatalf("a failed read holds %d bytes of the budget", budget.InUse())
				}
				return
			}
			if !bytes.Equal(b.Bytes(), data) {
				t.Fatalf("read %d bytes, want the %d sent", b.Len(), len(data))
			}
			if b.Reserved() > tc.maxCap || budget.InUse() != b.Reserved() {
				t.Fatalf("capacity %d (budget in use %d), want at most %d", b.Reserved(), budget.InUse(), tc.maxCap)
			}
			b.Release()
			if budget.InUse() != 0 || b.Len() != 0 {
				t.Fatalf("after Release: budget in use %d, length %d", budget.InUse(), b.Len())
			}
		})
	}
}

// TestReadStalledHoldsWhatArrived is the defence: a body that declares 30 MB and stalls after a
// few KB holds about what arrived, never its declared length.
func TestReadStalledHoldsWhatArrived(t *testing.T) {
	for _, sent := range []int{0, 1, 3000, body.FirstSize, 50_000, 1 << 20} {
		budget := body.NewBudget(1 << 30)
		b := &body.Buffer{}
		b.Reset(body.Options{Limit: 32 << 20, Declared: 30_000_000, Budget: budget})
		_, err := b.ReadFrom(stalled(sent))
		if !errors.Is(err, errStalled) {
			t.Fatalf("sent %d: err = %v, want the reader's", sent, err)
		}
		if bound := max(int64(body.FirstSize), 2*int64(sent)+2); budget.InUse() > bound || b.Reserved() != budget.InUse() {
			t.Fatalf("sent %d: holds %d bytes (reserved %d), want at most %d", sent, budget.InUse(), b.Reserved(), bound)
		}
		b.Release()
	}
}

func TestReadBudget(t *testing.T) {
	budget := body.NewBudget(100 << 10)
	held, err := body.Read(
		strings.NewReader(strings.Repeat("a", 40<<10)),
		body.Options{Limit: 1 << 20, Declared: 40 << 10, Budget: budget},
	)
	if err != nil {
		t.Fatal(err)
	}
	// About 60 KiB are left: a 60 KiB body is refused once its buffer outgrows them (growing
	// from 32 to 64 KiB holds both for the copy), and gives back what it had.
	_, err = body.Read(strings.NewReader(strings.Repeat("b", 60<<10)), body.Options{Limit: 1 << 20, Budget: budget})
	var be *body.BudgetError
	if !errors.As(err, &be) || !errors.Is(err, body.ErrBudgetExhausted) || be.Budget != 100<<10 {
		t.Fatalf("err = %v, want a *BudgetError of the 100 KiB budget", err)
	}
	if budget.InUse() != held.Reserved() || budget.Refused() != 1 {
		t.Fatalf("in use %d, want the first body's %d; refused %d, want 1", budget.InUse(), held.Reserved(), budget.Refused())
	}
	held.Release()
	if _, err := body.Read(
		strings.NewReader(strings.Repeat("b", 60<<10)),
		body.Options{Limit: 1 << 20, Budget: budget},
	); err != nil {
		t.Fatalf("after the first body is done: %v", err)
	}
}

func TestReadError(t *testing.T) {
	budget := body.NewBudget(1 << 20)
	_, err := body.Read(stalled(10), body.Options{Limit: 100, Budget: budget})
	if !errors.Is(err, errStalled) || !strings.HasPrefix(err.Error(), "read request body: ") {
		t.Fatalf("err = %v, want the reader's error wrapped", err)
	}
	if budget.InUse() != 0 {
		t.Fatalf("a failed read holds %d bytes", budget.InUse())
	}
}

func TestAppend(t *testing.T) {
	for _, tc := range []struct {
		name     string
		chunks   []int
		declared int64
		limit    int64
		wantErr  error
		maxCap   int64
	}{
		{"one chunk", []int{100}, 100, 1000, nil, 101},
		{"envoy chunks", []int{65536, 36864}, 102400, 1 << 20, nil, 102401},
		{"undeclared", []int{1000, 1000, 1000, 5000}, 0, 1 << 20, nil, body.FirstSize * 2},
		{"over the limit", []int{600, 600}, 0, 1000, body.ErrTooLarge, body.FirstSize},
		{"exactly the limit", []int{500, 500}, 0, 1000, nil, 1001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget := body.NewBudget(1 << 30)
			var b body.Buffer
			b.Reset(body.Options{Limit: tc.limit, Declared: tc.declared, Budget: budget})
			var want []byte
			var err error
			for i, n := range tc.chunks {
				chunk := bytes.Repeat([]byte{byte('a' + i)}, n)
				if err = b.Append(chunk); err != nil {
					break
				}
				want = append(want, chunk...)
			}
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Fatalf("body of %d bytes, want %d", b.Len(), len(want))
			}
			if b.Reserved() > tc.maxCap || budget.InUse() != b.Reserved() {
				t.Fatalf("capacity %d (budget %d), want at most %d", b.Reserved(), budget.InUse(), tc.maxCap)
			}
			b.Release()
			if budget.InUse() != 0 {
				t.Fatalf("after Release: %d in use", budget.InUse())
			}
		})
	}
}

// classPool hands out buffers of power-of-two capacities, as gRPC's pools do, and counts what it
// has outstanding.
type classPool struct{ out int }

func (p *classPool) Get(n int) *[]byte {
	c := body.FirstSize
	for c < n {
		c *= 2
	}
	b := make([]byte, n, c)
	p.out++
	return &b
}

func (p *classPool) Put(*[]byte) { p.out-- }

func TestPool(t *testing.T) {
	pool := &classPool{}
	budget := body.NewBudget(1 << 20)
	b, err := body.Read(
		strings.NewReader(strings.Repeat("p", 5000)),
		body.Options{Limit: 1 << 20, Declared: 5000, Budget: budget, Pool: pool},
	)
	if err != nil {
		t.Fatal(err)
	}
	// The pool's 8 KiB class is charged in full, not the 5,001 bytes asked for.
	if b.Reserved() != 8<<10 || budget.InUse() != 8<<10 || pool.out != 1 {
		t.Fatalf("reserved %d, in use %d, %d pooled buffers out; want 8 KiB and one", b.Reserved(), budget.InUse(), pool.out)
	}
	b.Release()
	if pool.out != 0 || budget.InUse() != 0 {
		t.Fatalf("after Release: %d pooled buffers out, %d in use", pool.out, budget.InUse())
	}
	// A class that does not fit the budget is refused and goes back to the pool.
	small := body.NewBudget(6000)
	if _, err := body.Read(
		strings.NewReader(strings.Repeat("p", 5000)),
		body.Options{Limit: 1 << 20, Declared: 5000, Budget: small, Pool: pool},
	); !errors.Is(
		err,
		body.ErrBudgetExhausted,
	) {
		t.Fatalf("err = %v, want the budget's", err)
	}
	if pool.out != 0 || small.InUse() != 0 {
		t.Fatalf("after the refusal: %d pooled buffers out, %d in use", pool.out, small.InUse())
	}
}

func TestClearKeepsTheReservation(t *testing.T) {
	budget := body.NewBudget(1 << 20)
	var b body.Buffer
	b.Reset(body.Options{Limit: 64 << 10, Budget: budget})
	if err := b.Append([]byte(strings.Repeat("a", 10<<10))); err != nil {
		t.Fatal(err)
	}
	reserved := b.Reserved()
	b.Clear()
	if b.Len() != 0 || b.Reserved() != reserved || budget.InUse() != reserved {
		t.Fatalf(
			"after Clear: len %d, reserved %d (budget %d), want 0 and %d",
			b.Len(),
			b.Reserved(),
			budget.InUse(),
			reserved,
		)
	}
	if err := b.Append([]byte(strings.Repeat("b", 10<<10))); err != nil || b.Reserved() != reserved {
		t.Fatalf("Append after Clear: %v, reserved %d, want the same buffer's %d", err, b.Reserved(), reserved)
	}
	b.Release()
	if budget.InUse() != 0 {
		t.Fatalf("after Release the budget holds %d bytes", budget.InUse())
	}
}

// TestReadOnce: each call adds one read's bytes, io.EOF ends the body, and the limit and the
// budget hold as in ReadFrom.
func TestReadOnce(t *testing.T) {
	tests := []struct {
		name    string
		size    int
		o       body.Options
		wantErr error
	}{
		{"whole", 10_000, body.Options{Limit: 10_000}, nil},
		{"over the limit", 10_001, body.Options{Limit: 10_000}, body.ErrTooLarge},
		{"declared over the limit", 10, body.Options{Limit: 10, Declared: 11}, body.ErrTooLarge},
		{"budget", 10_000, body.Options{Limit: 1 << 20, Budget: body.NewBudget(8 << 10)}, body.ErrBudgetExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b body.Buffer
			b.Reset(tt.o)
			defer b.Release()
			r := iotest.OneByteReader(bytes.NewReader(bytes.Repeat([]byte("x"), tt.size)))
			var err error
			for calls := 0; err == nil; calls++ {
				var n int
				n, err = b.ReadOnce(r)
				if n > 1 || (n == 1 && b.Len() != calls+1) {
					t.Fatalf("call %d added %d bytes, length %d", calls, n, b.Len())
				}
			}
			if tt.wantErr == nil {
				if err != io.EOF || b.Len() != tt.size {
					t.Fatalf("ended with %v after %d bytes, want io.EOF after %d", err, b.Len(), tt.size)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if b.Reserved() > tt.o.Limit+1 {
				t.Errorf("reserved %d bytes for a limit of %d", b.Reserved(), tt.o.Limit)
			}
		})
	}
}
