package promlabel_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-dev/switchyard/contract/promlabel"
)

func TestClean(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "llama-3.1-8b", "llama-3.1-8b"},
		{"unicode", "modèle/ü", "modèle/ü"},
		{"empty", "", promlabel.Other},
		{"invalid utf-8", "bad\xff\xfe", promlabel.Other},
		{"lone continuation byte", "\x80", promlabel.Other},
		{"truncated rune", "é"[:1], promlabel.Other},
		{"at the length limit", strings.Repeat("a", promlabel.MaxLen), strings.Repeat("a", promlabel.MaxLen)},
		{"over the length limit", strings.Repeat("a", promlabel.MaxLen+1), promlabel.Other},
		{"other itself", promlabel.Other, promlabel.Other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := promlabel.Clean(tc.in); got != tc.want {
				t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestSet(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  int
		preset []string
		in     []string
		want   []string
	}{
		{"admits up to the limit", 2, nil, []string{"a", "b", "c", "a", "b"}, []string{"a", "b", promlabel.Other, "a", "b"}},
		{"full stays full", 1, nil, []string{"a", "b", "b"}, []string{"a", promlabel.Other, promlabel.Other}},
		{"invalid values take no slot", 1, nil, []string{"\xff", "", strings.Repeat("x", promlabel.MaxLen+1), "a"},
			[]string{promlabel.Other, promlabel.Other, promlabel.Other, "a"}},
		{"other takes no slot", 1, nil, []string{promlabel.Other, "a"}, []string{promlabel.Other, "a"}},
		{"presets count against the limit", 2, []string{"p"}, []string{"a", "b", "p"}, []string{"a", promlabel.Other, "p"}},
		{"presets past the limit are kept", 1, []string{"p", "q"}, []string{"q", "a"}, []string{"q", promlabel.Other}},
		{"invalid presets are dropped", 1, []string{"\xff"}, []string{"a"}, []string{"a"}},
		{"zero limit means the default", 0, nil, []string{"a"}, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := promlabel.NewSet(tc.limit, tc.preset...)
			for i, v := range tc.in {
				if got := s.Value(v); got != tc.want[i] {
					t.Errorf("Value(%q) #%d = %q, want %q", v, i, got, tc.want[i])
				}
			}
		})
	}
}

func TestSetDefaultLimit(t *testing.T) {
	s := promlabel.NewSet(0)
	for i := range 10 * promlabel.DefaultLimit {
		s.Value(fmt.Sprint("m", i))
	}
	if s.Len() != promlabel.DefaultLimit {
		t.Errorf(
			"Len = %d after %d distinct values, want the cap %d",
			s.Len(),
			10*promlabel.DefaultLimit,
			promlabel.DefaultLimit,
		)
	}
	if got := s.Value("m0"); got != "m0" {
		t.Errorf("an admitted value maps to %q", got)
	}
	if got := s.Value(fmt.Sprint("m", promlabel.DefaultLimit)); got != promlabel.Other {
		t.Errorf("a value past the cap maps to %q", got)
	}
}

// TestSetConcurrent admits from many goroutines at once: the cap holds exactly and every
// goroutine sees the same mapping (run with -race).
func TestSetConcurrent(t *testing.T) {
	const limit, workers, values = 50, 8, 400
	s := promlabel.NewSet(limit)
	got := make([]map[string]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			got[w] = map[string]string{}
			for i := range values {
				v := fmt.Sprint("v", (i*7+w)%values)
				got[w][v] = s.Value(v)
			}
		})
	}
	wg.Wait()
	if s.Len() != limit {
		t.Fatalf("Len = %d, want %d", s.Len(), limit)
	}
	admitted := 0
	for v, l := range got[0] {
		if l != promlabel.Other {
			admitted++
		}
		for w := 1; w < workers; w++ {
			if got[w][v] != l {
				t.Errorf("%q maps to %q in one goroutine and %q in another", v, l, got[w][v])
			}
		}
	}
	if admitted != limit {
		t.Errorf("%d values admitted, want %d", admitted, limit)
	}
}

func BenchmarkSetValue(b *testing.B) {
	s := promlabel.NewSet(0)
	names := make([]string, 100)
	for i := range names {
		names[i] = s.Value(fmt.Sprint("model-", i))
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			_ = s.Value(names[i%len(names)])
			i++
		}
	})
}
