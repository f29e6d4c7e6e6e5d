package harness

import (
	"os"
	"testing"
)

func TestEndToEndGate(t *testing.T) {
	tests := []struct {
		value   string
		set     bool
		skipped bool
	}{
		{value: "", set: false, skipped: false},
		{value: "0", set: true, skipped: true},
		{value: "1", set: true, skipped: false},
		{value: "", set: true, skipped: false},
	}
	for _, tt := range tests {
		name := "unset"
		if tt.set {
			name = EndToEndEnv + "=" + tt.value
		}
		t.Run(name, func(t *testing.T) {
			t.Setenv(EndToEndEnv, tt.value) // restored when the subtest ends
			if !tt.set {
				if err := os.Unsetenv(EndToEndEnv); err != nil {
					t.Fatal(err)
				}
			}
			ran := false
			t.Run("test", func(t *testing.T) {
				EndToEnd(t)
				ran = true
			})
			if ran == tt.skipped || EndToEndSkipped() != tt.skipped {
				t.Errorf("ran %v, EndToEndSkipped %v; want skipped %v", ran, EndToEndSkipped(), tt.skipped)
			}
		})
	}
}
