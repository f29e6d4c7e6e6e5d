package oracle_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/oracle"
)

func TestParseFleet(t *testing.T) {
	tests := []struct {
		spec    string
		want    []string
		wantErr string
	}{
		{"h100x2,a10gx1", []string{"h100", "h100", "a10g"}, ""},
		{"a100, l40sx2", []string{"a100", "l40s", "l40s"}, ""},
		{"h100x0", nil, "positive integer"},
		{"h100xfour", nil, "positive integer"},
		{"v100x2", nil, "v100"},
		{"", nil, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := oracle.ParseFleet(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*oracle.Config)
		wantErr string
	}{
		{"valid", func(c *oracle.Config) {}, ""},
		{"no pods", func(c *oracle.Config) { c.Profiles = nil }, "profiles"},
		{"unknown profile", func(c *oracle.Config) { c.Profiles = []string{"h100", "tpu"} }, "profiles[1]"},
		{"negative max loras", func(c *oracle.Config) { c.MaxLoras = -1 }, "max loras"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := oracle.DefaultConfig()
			cfg.Profiles = []string{"h100"}
			tt.mutate(&cfg)
			err := cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestNearestRank(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i + 1)
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"p50 of 100", hundred, 0.50, 50},
		{"p95 of 100", hundred, 0.95, 95},
		{"p99 of 100", hundred, 0.99, 99},
		{"p100 of 100", hundred, 1, 100},
		{"p50 of 3", []time.Duration{1, 2, 3}, 0.5, 2},
		{"p99 of 3", []time.Duration{1, 2, 3}, 0.99, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := oracle.NearestRank(tt.sorted, tt.q); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
