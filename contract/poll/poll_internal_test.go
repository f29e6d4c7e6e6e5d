package poll

import (
	"testing"
	"time"
)

// The pauses double from 1 ms and stop growing at 100 ms.
func TestNextPause(t *testing.T) {
	var got []time.Duration
	for d := firstPause; len(got) < 10; d = nextPause(d) {
		got = append(got, d)
	}
	ms := time.Millisecond
	want := []time.Duration{1 * ms, 2 * ms, 4 * ms, 8 * ms, 16 * ms, 32 * ms, 64 * ms, 100 * ms, 100 * ms, 100 * ms}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pauses %v, want %v", got, want)
		}
	}
}
