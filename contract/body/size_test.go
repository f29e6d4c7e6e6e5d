package body_test

import (
	"testing"

	"github.com/switchyard-dev/switchyard/contract/body"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"268435456", 268435456, true},
		{"256MiB", 256 << 20, true},
		{"1Gi", 1 << 30, true},
		{"1536Mi", 1536 << 20, true},
		{"500M", 500e6, true},
		{"2GB", 2e9, true},
		{"4KiB", 4096, true},
		{"8k", 8000, true},
		{"100B", 100, true},
		{"0", 0, true},
		{"", 0, false},
		{"MiB", 0, false},
		{"-1", 0, false},
		{"1.5Gi", 0, false},
		{"12 parsecs", 0, false},
		{"9000000TiB", 0, false},
	} {
		got, err := body.ParseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
