package dnsserver

import (
	"slices"
	"testing"
	"time"
)

func TestPreferences(t *testing.T) {
	cfg := Config{
		Regions: map[string]Region{"a": {}, "b": {}, "c": {}, "d": {}},
		RTT: map[string]map[string]time.Duration{
			"a": {"b": 0, "c": 50 * time.Millisecond},
			"c": {"b": 10 * time.Millisecond},
		},
	}
	tests := []struct {
		from string
		want []string
	}{
		{"a", []string{"a", "b", "c", "d"}}, // b at RTT 0 still comes after a itself
		{"b", []string{"b", "a", "c", "d"}}, // RTTs apply in both directions
		{"c", []string{"c", "b", "a", "d"}},
		{"d", []string{"d", "a", "b", "c"}}, // no RTTs: by name after itself
	}
	prefs := cfg.preferences()
	for _, tt := range tests {
		t.Run(tt.from, func(t *testing.T) {
			if got := prefs[tt.from]; !slices.Equal(got, tt.want) {
				t.Fatalf("preferences[%s] = %v, want %v", tt.from, got, tt.want)
			}
		})
	}
}
