// Package physics holds modelsim's step-time models: how long one continuous-batching engine step
// takes given what it computes, and how long the front end holds a request before the engine sees
// it. Several families of curves are available so that a routing policy can be measured on
// physics it was not written against:
//
//   - linear: the original model: fixed overhead + uncached prefill tokens ÷ prefill rate + an
//     inter-token latency interpolated linearly in the batch size (the GPU profile's ITL figures).
//   - blis: the linear step model BLIS (the llm-d inference simulator) fitted to measured vLLM
//     runs: β0 + β1 · prefill tokens + β2 · decode tokens, with its per-request queueing time
//     α0 + α1 · prompt tokens and its per-step output processing α2.
//   - attention: blis plus the attention work its features do not see: decoding sequences read
//     their whole KV cache from HBM every step (a term in the batch's total context), and a
//     prefill chunk attends to every earlier token of its sequence (quadratic in prompt length).
//
// Step times carry seeded multiplicative jitter: uniform ±Profile.Jitter for linear by default,
// lognormal for the others, or lognormal with a chosen spread for every family.
package physics

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
)

// Family names a step-time model.
type Family string

// The step-time families.
const (
	// Linear is the original model driven by the GPU profile's prefill rate and ITL figures.
	Linear Family = "linear"
	// BLIS is BLIS's fitted linear step model (per-step base, per-prefill-token, per-decode-token).
	BLIS Family = "blis"
	// Attention is BLIS plus decode KV reads and quadratic prefill attention.
	Attention Family = "attention"
)

// Families lists every family, the default first.
func Families() []Family { return []Family{Linear, BLIS, Attention} }

// FamilyDefaultJitter selects the family's own jitter (Config.Jitter).
const FamilyDefaultJitter = -1

// DefaultLognormalSigma is the lognormal step-time spread of the blis and attention families when
// no jitter is chosen.
const DefaultLognormalSigma = 0.03

// MaxJitter bounds Config.Jitter: a lognormal σ of 1 already makes a step 2.7 times slower or
// faster at one standard deviation.
const MaxJitter = 1.0

// Config selects a step-time model.
type Config struct {
	// Family is the step-time model.
	Family Family
	// Jitter is the σ of the lognormal factor (mean 1) every step time is multiplied by; 0 turns
	// jitter off, FamilyDefaultJitter keeps the family's own (linear: uniform ±Profile.Jitter;
	// blis and attention: lognormal σ = DefaultLognormalSigma).
	Jitter float64
}

// DefaultConfig returns the original model with its own jitter.
func DefaultConfig() Config {
	return Config{
		Family: Linear,              // what every test and benchmark was written against
		Jitter: FamilyDefaultJitter, // uniform ±2% for linear
	}
}

// ErrUnknownFamily is returned for a family name that does not exist.
var ErrUnknownFamily = errors.New("physics: unknown family")

// ParseFamily returns the family called name (case-insensitive).
func ParseFamily(name string) (Family, error) {
	f := Family(strings.ToLower(strings.TrimSpace(name)))
	if slices.Contains(Families(), f) {
		return f, nil
	}
	names := make([]string, 0, 3)
	for _, f := range Families() {
		names = append(names, string(f))
	}
	return "", fmt.Errorf("%w %q (known: %s)", ErrUnknownFamily, name, strings.Join(names, ", "))
}

// Validate reports the first unusable field.
func (c Config) Validate() error {
	if _, err := ParseFamily(string(c.Family)); err != nil {
		return err
	}
	if c.Jitter != FamilyDefaultJitter && (c.Jitter < 0 || c.Jitter > MaxJitter || math.IsNaN(c.Jitter)) {
		return fmt.Errorf("physics: jitter %v must be in [0, %v] (or %d for the family's default)",
			c.Jitter, MaxJitter, FamilyDefaultJitter)
	}
	return nil
}

// Batch is what one engine step computes.
type Batch struct {
	// PrefillTokens is the number of uncached prompt tokens computed (all chunks together).
	PrefillTokens int
	// PrefillPairs is the causal attention work of those chunks: for each chunk of n tokens after
	// c already computed tokens, n·c + n(n+1)/2 (query, key) pairs.
	PrefillPairs float64
	// DecodeSeqs is the number of sequences decoding one token.
	DecodeSeqs int
	// DecodeContext is the KV tokens those sequences attend to, summed over the batch.
	DecodeContext int
	// AdapterLoads is the number of LoRA adapters loaded by the step.
	AdapterLoads int
}

// AddPrefill adds a prefill chunk of n tokens after computed tokens already in the KV cache.
func (b *Batch) AddPrefill(computed, n int) {
	b.PrefillTokens += n
	b.PrefillPairs += float64(n)*float64(computed) + float64(n)*float64(n+1)/2
}

// AddDecode adds one sequence decoding with context tokens in its KV cache.
func (b *Batch) AddDecode(context int) {
	b.DecodeSeqs++
	b.DecodeContext += context
}

// Model computes step and front-end times for one GPU profile. It holds no state and is safe for
// concurrent use; the random source passed to Jitter is the caller's.
type Model struct {
	family  Family
	prof    profile.Profile
	coef    Coefficients
	uniform float64 // ±spread of uniform jitter (linear default), 0 when lognormal
	sigma   float64 // lognormal σ, 0 when uniform or off
}

// New returns the model of cfg for prof. The blis and attention families need coefficients for
// the profile's GPU (see Lookup).
func New(cfg Config, prof profile.Profile) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Model{family: cfg.Family, prof: prof}
	if cfg.Family != Linear {
		c, err := Lookup(prof.Name)
		if err != nil {
			return nil, err
		}
		m.coef = c
	}
	switch {
	case cfg.Jitter != FamilyDefaultJitter:
		m.sigma = cfg.Jitter
	case cfg.Family == Linear:
		m.uniform = prof.Jitter
	default:
		m.sigma = DefaultLognormalSigma
	}
	return m, nil
}

// Family returns the model's family.
func (m *Model) Family() Family { return m.family }

// Coefficients returns the calibrated coefficients (zero for the linear family).
func (m *Model) Coefficients() Coefficients { return m.coef }

// StepTime is the duration of a step computing b, before jitter.
func (m *Model) StepTime(b Batch) time.Duration {
	p := m.prof
	loads := time.Duration(b.AdapterLoads) * p.LoRALoad
	if m.family == Linear {
		d := p.StepOverhead + p.PrefillTime(b.PrefillTokens) + loads
		if b.DecodeSeqs > 0 {
			d += max(p.ITL(b.DecodeSeqs)-p.StepOverhead, 0)
		}
		return d
	}
	c := m.coef
	ns := float64(c.StepBase) + c.PrefillTokenNs*float64(b.PrefillTokens) + c.DecodeTokenNs*float64(b.DecodeSeqs)
	if m.family == Attention {
		ns += c.KVReadTokenNs*float64(b.DecodeContext) + c.AttentionPairNs*b.PrefillPairs
	}
	return time.Duration(ns) + loads
}

// APIOverhead is how long the front end holds a request of promptTokens before the engine sees it:
// the profile's fixed overhead for linear, BLIS's queueing time α0 + α1 · prompt tokens otherwise.
func (m *Model) APIOverhead(promptTokens int) time.Duration {
	if m.family == Linear {
		return m.prof.APIOverhead
	}
	return m.coef.QueueBase + time.Duration(m.coef.QueueTokenNs*float64(max(promptTokens, 0)))
}

// Jittered multiplies d by the model's jitter factor drawn from r. It draws nothing when jitter is
// off, so a jitter-free model leaves r's sequence untouched.
func (m *Model) Jittered(d time.Duration, r *rand.Rand) time.Duration {
	switch {
	case m.sigma > 0:
		return time.Duration(float64(d) * LognormalFactor(m.sigma, r.NormFloat64()))
	case m.uniform > 0:
		return time.Duration(float64(d) * (1 + m.uniform*(2*r.Float64()-1)))
	}
	return d
}

// LognormalFactor is exp(σz − σ²/2): lognormal with mean 1 for a standard normal z.
func LognormalFactor(sigma, z float64) float64 {
	return math.Exp(sigma*z - sigma*sigma/2)
}
