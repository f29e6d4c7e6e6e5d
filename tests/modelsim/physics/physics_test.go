package physics_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/physics"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
)

func model(t testing.TB, prof string, f physics.Family, jitter float64) *physics.Model {
	t.Helper()
	p, err := profile.Lookup(prof)
	if err != nil {
		t.Fatal(err)
	}
	m, err := physics.New(physics.Config{Family: f, Jitter: jitter}, p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func batch(prefillFrom, prefill, decodeSeqs, contextEach, loads int) physics.Batch {
	var b physics.Batch
	if prefill > 0 {
		b.AddPrefill(prefillFrom, prefill)
	}
	for range decodeSeqs {
		b.AddDecode(contextEach)
	}
	b.AdapterLoads = loads
	return b
}

// TestStepTimeHandComputed checks each family against step times worked out by hand from the
// documented coefficients (h100: step base 5,752.7 + 3,357.4 µs = 9.1101 ms, 17.251 µs per
// prefill token, 5.9991 µs per decoding sequence, 39.126 ns of KV read per context token,
// 0.64788 ns per prefill attention pair; linear: 1.5 ms overhead, 30,000 tok/s, ITL 8 → 15 ms).
func TestStepTimeHandComputed(t *testing.T) {
	tests := []struct {
		name   string
		prof   string
		family physics.Family
		b      physics.Batch
		want   time.Duration
	}{
		{"linear prefill 2000", "h100", physics.Linear, batch(0, 2000, 0, 0, 0), 68166667 * time.Nanosecond},
		{"linear decode 64", "h100", physics.Linear, batch(0, 0, 64, 5000, 0), 15 * time.Millisecond},
		{"linear mixed", "h100", physics.Linear, batch(0, 100, 1, 0, 0), 11333333 * time.Nanosecond},
		{"linear adapter load", "h100", physics.Linear, batch(0, 0, 1, 0, 1), 58 * time.Millisecond},
		// 9.110145 + 1000 × 0.017251 = 26.361010 ms
		{"blis prefill 1000", "h100", physics.BLIS, batch(0, 1000, 0, 0, 0), 26361010 * time.Nanosecond},
		// 9.110145 + 64 × 0.005999 = 9.494090 ms: context does not matter
		{"blis decode 64", "h100", physics.BLIS, batch(0, 0, 64, 2000, 0), 9494090 * time.Nanosecond},
		// + 128,000 context tokens × 39.126 ns = 5.008124 ms
		{"attention decode 64 at 2000", "h100", physics.Attention, batch(0, 0, 64, 2000, 0), 14502215 * time.Nanosecond},
		// 9.110145 + 2000 × 0.017251 + 2,001,000 pairs × 0.64788 ns = 44.908284 ms
		{"attention prefill 2000", "h100", physics.Attention, batch(0, 2000, 0, 0, 0), 44908284 * time.Nanosecond},
		// a chunk of 1000 after 7000 cached: 1000·7000 + 1000·1001/2 = 7,500,500 pairs = 4.859 ms
		{"attention chunk after context", "h100", physics.Attention, batch(7000, 1000, 0, 0, 0), 31220442 * time.Nanosecond},
		// a100 is BLIS's own fit: 16,441.5 + 6,276.2 µs + 500 × 47.837 µs = 46.636484 ms
		{"blis a100 prefill 500", "a100", physics.BLIS, batch(0, 500, 0, 0, 0), 46636484 * time.Nanosecond},
		// a10g: 9.110145 × 30/8 = 34.163045 ms step base, 172.51 µs per prefill token
		{"blis a10g prefill 100", "a10g", physics.BLIS, batch(0, 100, 0, 0, 0), 51413909 * time.Nanosecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := model(t, tt.prof, tt.family, 0).StepTime(tt.b)
			if d := got - tt.want; d < -time.Microsecond || d > time.Microsecond {
				t.Fatalf("StepTime = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAPIOverhead(t *testing.T) {
	tests := []struct {
		name   string
		prof   string
		family physics.Family
		tokens int
		want   time.Duration
	}{
		{"linear is fixed", "h100", physics.Linear, 2000, 3 * time.Millisecond},
		{"blis h100: 232.46 µs + 2000 × 1.7524 µs", "h100", physics.BLIS, 2000, 3737182 * time.Nanosecond},
		{"attention equals blis", "h100", physics.Attention, 2000, 3737182 * time.Nanosecond},
		{"blis a100: 7,739.7 µs + 100 × 2.3089 µs", "a100", physics.BLIS, 100, 7970626 * time.Nanosecond},
		{"l40s keeps h100's host", "l40s", physics.BLIS, 0, 232461 * time.Nanosecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := model(t, tt.prof, tt.family, 0).APIOverhead(tt.tokens)
			if d := got - tt.want; d < -time.Microsecond || d > time.Microsecond {
				t.Fatalf("APIOverhead(%d) = %v, want %v", tt.tokens, got, tt.want)
			}
		})
	}
}

// TestDerivedProfiles checks that l40s and a10g are h100's fit scaled by WORKLOADS.md's ratios,
// and that every GPU is slower than h100 on every term.
func TestDerivedProfiles(t *testing.T) {
	h, _ := physics.Lookup("h100")
	tests := []struct {
		name                  string
		base, prefill, decode float64
		kvAtLeast             float64
	}{
		{"l40s", 25.0 / 8, 30000.0 / 8000, 15.0 / 7, 3.8},
		{"a10g", 30.0 / 8, 30000.0 / 3000, 30.0 / 7, 5.5},
	}
	ratio := func(a, b float64) float64 { return a / b }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := physics.Lookup(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			checks := []struct {
				what      string
				got, want float64
			}{
				{"step base", ratio(float64(c.StepBase), float64(h.StepBase)), tt.base},
				{"prefill token", ratio(c.PrefillTokenNs, h.PrefillTokenNs), tt.prefill},
				{"decode token", ratio(c.DecodeTokenNs, h.DecodeTokenNs), tt.decode},
				{"attention pair", ratio(c.AttentionPairNs, h.AttentionPairNs), tt.prefill},
			}
			for _, ch := range checks {
				if math.Abs(ch.got-ch.want) > 1e-6*ch.want {
					t.Errorf("%s ratio to h100 = %.6f, want %.6f", ch.what, ch.got, ch.want)
				}
			}
			if r := c.KVReadTokenNs / h.KVReadTokenNs; r < tt.kvAtLeast {
				t.Errorf("KV read %.1f× h100's, want >= %.1f× (HBM bandwidth)", r, tt.kvAtLeast)
			}
		})
	}
	if _, err := physics.Lookup("tpu"); err == nil {
		t.Fatal("coefficients for an unknown GPU")
	}
}

// TestAttentionSuperlinear: under the attention family a long prompt costs more per token than a
// short one; under blis it costs the same.
func TestAttentionSuperlinear(t *testing.T) {
	perToken := func(f physics.Family, n int) float64 {
		m := model(t, "h100", f, 0)
		var b physics.Batch
		b.AddPrefill(0, n)
		return float64(m.StepTime(b)-m.StepTime(physics.Batch{})) / float64(n)
	}
	for _, tt := range []struct {
		family physics.Family
		min    float64 // per-token cost at 32k over at 1k
		max    float64
	}{
		{physics.BLIS, 0.999, 1.001},
		{physics.Attention, 1.5, 3},
	} {
		if r := perToken(tt.family, 32000) / perToken(tt.family, 1000); r < tt.min || r > tt.max {
			t.Errorf("%s: per-token prefill cost at 32k / at 1k = %.3f, want in [%v, %v]", tt.family, r, tt.min, tt.max)
		}
	}
}

// TestJitterDistribution draws many factors and checks their distribution with generous bounds:
// lognormal with mean 1 and the configured σ, and linear's uniform ±2%.
func TestJitterDistribution(t *testing.T) {
	const n = 20000
	const d = 10 * time.Millisecond
	tests := []struct {
		name   string
		family physics.Family
		jitter float64
		sigma  float64 // expected σ of ln(factor); 0 for uniform
		spread float64 // uniform: every factor within 1 ± spread
	}{
		{"lognormal 0.1", physics.Attention, 0.1, 0.1, 0},
		{"lognormal 0.3 on linear", physics.Linear, 0.3, 0.3, 0},
		{"blis default", physics.BLIS, physics.FamilyDefaultJitter, physics.DefaultLognormalSigma, 0},
		{"linear default uniform", physics.Linear, physics.FamilyDefaultJitter, 0, 0.02},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := model(t, "h100", tt.family, tt.jitter)
			r := rand.New(rand.NewPCG(1, 2))
			var sum, sumLog, sumLog2 float64
			lo, hi := math.Inf(1), math.Inf(-1)
			for range n {
				f := float64(m.Jittered(d, r)) / float64(d)
				sum += f
				sumLog += math.Log(f)
				sumLog2 += math.Log(f) * math.Log(f)
				lo, hi = min(lo, f), max(hi, f)
			}
			mean := sum / n
			if math.Abs(mean-1) > 0.01 {
				t.Errorf("mean factor %.4f, want 1 ± 0.01", mean)
			}
			if tt.spread > 0 {
				if lo < 1-tt.spread-1e-9 || hi > 1+tt.spread+1e-9 || hi-lo < tt.spread {
					t.Errorf("uniform factors in [%.4f, %.4f], want to fill 1 ± %v", lo, hi, tt.spread)
				}
				return
			}
			sd := math.Sqrt(sumLog2/n - (sumLog/n)*(sumLog/n))
			if sd < 0.9*tt.sigma || sd > 1.1*tt.sigma {
				t.Errorf("σ of ln(factor) = %.4f, want %v ± 10%%", sd, tt.sigma)
			}
			if lo <= 0 || hi < math.Exp(2*tt.sigma) {
				t.Errorf("factors in [%.4f, %.4f]: want positive and a right tail past exp(2σ)", lo, hi)
			}
		})
	}
}

func TestJitterDeterministicAndOff(t *testing.T) {
	m := model(t, "a100", physics.Attention, 0.2)
	draw := func(seed uint64) []time.Duration {
		r := rand.New(rand.NewPCG(seed, seed))
		out := make([]time.Duration, 50)
		for i := range out {
			out[i] = m.Jittered(time.Second, r)
		}
		return out
	}
	a, b, c := draw(7), draw(7), draw(8)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d: same seed gave %v and %v", i, a[i], b[i])
		}
	}
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Fatal("different seeds gave the same jitter")
	}
	off := model(t, "a100", physics.Attention, 0)
	src := rand.NewPCG(1, 1)
	before := *src
	if got := off.Jittered(time.Second, rand.New(src)); got != time.Second {
		t.Fatalf("jitter 0 changed the step: %v", got)
	}
	if *src != before {
		t.Fatal("jitter 0 consumed random numbers")
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  physics.Config
		ok   bool
	}{
		{"default", physics.DefaultConfig(), true},
		{"attention off", physics.Config{Family: physics.Attention, Jitter: 0}, true},
		{"max jitter", physics.Config{Family: physics.BLIS, Jitter: physics.MaxJitter}, true},
		{"unknown family", physics.Config{Family: "cubic"}, false},
		{"empty family", physics.Config{}, false},
		{"negative jitter", physics.Config{Family: physics.Linear, Jitter: -0.5}, false},
		{"huge jitter", physics.Config{Family: physics.Linear, Jitter: 2}, false},
		{"NaN jitter", physics.Config{Family: physics.Linear, Jitter: math.NaN()}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
	if f, err := physics.ParseFamily(" Attention "); err != nil || f != physics.Attention {
		t.Fatalf("ParseFamily = %q, %v", f, err)
	}
	if _, err := physics.ParseFamily("quadratic"); !errors.Is(err, physics.ErrUnknownFamily) {
		t.Fatalf("unknown family: %v", err)
	}
}
