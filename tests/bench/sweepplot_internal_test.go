package bench

import (
	"fmt"
	"image/color"
	"testing"
)

// TestSweepStyleDistinct: every line of a sweep plot with all the policies and the oracle has its
// own colour and glyph (the palette alone repeats after 7), and the shipped profile is black.
func TestSweepStyleDistinct(t *testing.T) {
	lines := append(append([]string{}, Policies...), OraclePolicy)
	seen := map[string]string{}
	for i, p := range lines {
		c, shape, width := sweepStyle(i, p)
		r, g, b, a := c.RGBA()
		key := fmt.Sprintf("%d,%d,%d,%d %T", r, g, b, a, shape)
		if other, ok := seen[key]; ok {
			t.Errorf("%s and %s are drawn alike (%s)", other, p, key)
		}
		seen[key] = p
		if width <= 0 {
			t.Errorf("%s: line width %v", p, width)
		}
	}
	if c, _, _ := sweepStyle(3, Shipped); c != color.Black {
		t.Errorf("%s drawn in %v, want black", Shipped, c)
	}
}
