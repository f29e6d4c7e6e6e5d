package clustertable

import (
	"testing"
	"time"
)

// since counts and sums the sends after a time, including once the ring has wrapped (the oldest
// remembered send's running total is still known).
func TestSendsSince(t *testing.T) {
	var s sendTimes
	base := time.Unix(1000, 0)
	n := 3*len(s.ring) + 7
	for i := range n {
		s.add(base.Add(time.Duration(i)*time.Millisecond), i%10)
	}
	// tokens of sends lo..n-1
	sum := func(lo int) int64 {
		var t int64
		for i := lo; i < n; i++ {
			t += int64(i % 10)
		}
		return t
	}
	at := func(i int) int64 { return base.Add(time.Duration(i) * time.Millisecond).UnixNano() } // send i's time
	tests := []struct {
		name      string
		after     time.Time
		wantSends int
		wantTok   int64
		wantFirst int64 // the oldest counted send's time
	}{
		{"after the newest", base.Add(time.Duration(n) * time.Millisecond), 0, 0, 0},
		{"the newest ten", base.Add(time.Duration(n-11) * time.Millisecond), 10, sum(n - 10), at(n - 10)},
		{"every remembered send", base.Add(-time.Second), len(s.ring), sum(n - len(s.ring)), at(n - len(s.ring))},
		{
			"all but the oldest remembered",
			base.Add(time.Duration(n-len(s.ring)) * time.Millisecond),
			len(s.ring) - 1,
			sum(n - len(s.ring) + 1),
			at(n - len(s.ring) + 1),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sends, tok, first := s.since(tt.after.UnixNano())
			if sends != tt.wantSends || tok != tt.wantTok || first != tt.wantFirst {
				t.Fatalf(
					"since = %d sends, %d tokens, oldest at %d; want %d, %d, %d",
					sends,
					tok,
					first,
					tt.wantSends,
					tt.wantTok,
					tt.wantFirst,
				)
			}
		})
	}
	var empty sendTimes
	if n, tok, first := empty.since(0); n != 0 || tok != 0 || first != 0 {
		t.Fatalf("empty: %d, %d, %d", n, tok, first)
	}
	empty.add(base, 5)
	if n, tok, first := empty.since(0); n != 1 || tok != 5 || first != base.UnixNano() {
		t.Fatalf("one send: %d, %d, %d; want 1, 5, %d", n, tok, first, base.UnixNano())
	}
}
