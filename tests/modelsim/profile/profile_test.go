package profile_test

import (
	"errors"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		name       string
		prefill    float64
		itl1, itl4 time.Duration
		kv, seqs   int
	}{
		{"h100", 30000, 8 * time.Millisecond, 15 * time.Millisecond, 400000, 256},
		{"A100", 15000, 14 * time.Millisecond, 25 * time.Millisecond, 250000, 256},
		{"l40s", 8000, 25 * time.Millisecond, 40 * time.Millisecond, 120000, 128},
		{" a10g ", 3000, 30 * time.Millisecond, 60 * time.Millisecond, 30000, 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := profile.Lookup(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if p.PrefillTokensPerSec != tt.prefill || p.ITLBatch1 != tt.itl1 || p.ITLBatch64 != tt.itl4 ||
				p.KVTokens != tt.kv || p.MaxNumSeqs != tt.seqs {
				t.Fatalf("profile %+v", p)
			}
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
	if _, err := profile.Lookup("tpu"); !errors.Is(err, profile.ErrUnknown) {
		t.Fatalf("unknown profile: %v", err)
	}
}

func TestITLAndPrefill(t *testing.T) {
	p, _ := profile.Lookup("a10g")
	tests := []struct {
		batch int
		want  time.Duration
	}{
		{0, 0}, {1, 30 * time.Millisecond}, {64, 60 * time.Millisecond}, {127, 90 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := p.ITL(tt.batch); got.Round(time.Microsecond) != tt.want {
			t.Errorf("ITL(%d) = %v, want %v", tt.batch, got, tt.want)
		}
	}
	if got := p.PrefillTime(3000); got != time.Second {
		t.Errorf("PrefillTime(3000) = %v, want 1s", got)
	}
	if p.NumBlocks() != 30000/profile.BlockSize {
		t.Errorf("NumBlocks = %d", p.NumBlocks())
	}
}

func TestValidate(t *testing.T) {
	base, _ := profile.Lookup("h100")
	tests := []struct {
		name   string
		mutate func(*profile.Profile)
	}{
		{"no prefill", func(p *profile.Profile) { p.PrefillTokensPerSec = 0 }},
		{"itl order", func(p *profile.Profile) { p.ITLBatch64 = p.ITLBatch1 / 2 }},
		{"tiny kv", func(p *profile.Profile) { p.KVTokens = 8 }},
		{"no seqs", func(p *profile.Profile) { p.MaxNumSeqs = 0 }},
		{"no budget", func(p *profile.Profile) { p.MaxBatchedTokens = 0 }},
		{"negative load", func(p *profile.Profile) { p.LoRALoad = -1 }},
		{"jitter", func(p *profile.Profile) { p.Jitter = 0.7 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base
			tt.mutate(&p)
			if p.Validate() == nil {
				t.Fatal("invalid profile accepted")
			}
		})
	}
}
