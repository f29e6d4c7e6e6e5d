package routing

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// smallestBySelection is smallest by repeated selection, the definition smallest's one pass keeps.
func smallestBySelection(dst, idx []int, ex []Explanation, k int, keep func(int) bool) []int {
	for len(dst) < k {
		pick := -1
		for _, i := range idx {
			if keep(i) && !slices.Contains(dst, i) && (pick < 0 || ex[i].Estimate < ex[pick].Estimate) {
				pick = i
			}
		}
		if pick < 0 {
			break
		}
		dst = append(dst, pick)
	}
	return dst
}

// smallest's one pass gives what repeated selection gives, ties included.
func TestSmallestMatchesSelection(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := rng.IntN(40)
		ex := make([]Explanation, n)
		var idx []int
		for i := range ex {
			ex[i].Estimate = time.Duration(rng.IntN(6)) // many ties
			if rng.IntN(4) > 0 {
				idx = append(idx, i)
			}
		}
		var dst []int
		if n > 0 && rng.IntN(2) == 0 {
			dst = append(dst, rng.IntN(n))
		}
		k := 1 + rng.IntN(5)
		keep := func(i int) bool { return i%3 != 0 }
		want := smallestBySelection(slices.Clone(dst), idx, ex, k, keep)
		if got := smallest(slices.Clone(dst), idx, ex, k, keep); !slices.Equal(got, want) {
			t.Fatalf("smallest(%v, %v, k=%d) = %v, want %v (estimates %v)", dst, idx, k, got, want, ex)
		}
	}
}
