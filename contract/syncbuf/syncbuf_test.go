package syncbuf_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-dev/switchyard/contract/syncbuf"
)

// TestConcurrentWrites writes from many goroutines while reading (the race detector checks the
// locking) and then finds every write whole.
func TestConcurrentWrites(t *testing.T) {
	var b syncbuf.Buffer
	const writers, lines = 8, 100
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				if _, err := fmt.Fprintf(&b, "writer %d line %d\n", w, i); err != nil {
					t.Error(err)
				}
				_ = b.String()
			}
		})
	}
	wg.Wait()
	got := b.String()
	if n := strings.Count(got, "\n"); n != writers*lines {
		t.Fatalf("%d lines, want %d", n, writers*lines)
	}
	for w := range writers {
		if !strings.Contains(got, fmt.Sprintf("writer %d line %d\n", w, lines-1)) {
			t.Errorf("writer %d's last line is missing", w)
		}
	}
}

func TestZeroValueIsEmpty(t *testing.T) {
	var b syncbuf.Buffer
	if got := b.String(); got != "" {
		t.Fatalf("zero Buffer holds %q", got)
	}
}

func ExampleBuffer() {
	var out syncbuf.Buffer
	var wg sync.WaitGroup
	wg.Go(func() { fmt.Fprintln(&out, "written by another goroutine") })
	wg.Wait()
	fmt.Print(out.String())
	// Output: written by another goroutine
}
