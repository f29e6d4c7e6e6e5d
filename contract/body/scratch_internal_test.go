package body

import "testing"

func TestScratchClasses(t *testing.T) {
	if FirstSize<<(scratchClassNo-1) != maxScratch {
		t.Fatalf("%d classes from %d do not end at %d", scratchClassNo, FirstSize, maxScratch)
	}
	for _, tc := range []struct {
		size int64
		want int
	}{{FirstSize, 0}, {2 * FirstSize, 1}, {maxScratch, scratchClassNo - 1}, {FirstSize + 1, -1}, {FirstSize / 2, -1},
		{2 * maxScratch, -1}} {
		if got := scratchClass(tc.size); got != tc.want {
			t.Errorf("scratchClass(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}
