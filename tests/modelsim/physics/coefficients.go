package physics

import (
	"fmt"
	"strings"
	"time"
)

// Coefficients are one GPU's step-time coefficients for the blis and attention families
// (Llama-3.1-8B, BF16, TP=1).
type Coefficients struct {
	// Source says where the figures come from.
	Source string
	// StepBase is the fixed cost of a step: BLIS's β0 plus its output-processing time α2, which
	// BLIS adds to every token's time (the first token's and each inter-token gap) without
	// delaying its next step; here the step carries it, so the engine's steps are spaced by the
	// gaps a client sees.
	StepBase time.Duration
	// PrefillTokenNs is the cost of one uncached prompt token (β1), in nanoseconds.
	PrefillTokenNs float64
	// DecodeTokenNs is the cost of one decoding sequence (β2), in nanoseconds.
	DecodeTokenNs float64
	// QueueBase and QueueTokenNs are the front end's time before the engine sees a request:
	// α0 + α1 · prompt tokens.
	QueueBase    time.Duration
	QueueTokenNs float64
	// KVReadTokenNs is the time to stream one token's KV cache (every layer) from HBM in a decode
	// step: kvBytesPerToken ÷ the GPU's memory bandwidth (attention family).
	KVReadTokenNs float64
	// AttentionPairNs is the cost of one causal (query, key) pair of prefill attention:
	// β1 · attentionFLOPsPerPair ÷ linearFLOPsPerToken, i.e. attention computed as efficiently
	// as the linear layers (a lower bound; attention family).
	AttentionPairNs float64
}

// Llama-3.1-8B's shape (its config.json): 32 layers, 32 query heads and 8 KV heads of 128 dims,
// 8.03 B parameters of which 2 × 525 M are the embedding and the untied LM head.
const (
	llamaLayers     = 32
	llamaHeads      = 32
	llamaKVHeads    = 8
	llamaHeadDim    = 128
	llamaBodyParams = 8.03e9 - 2*0.525e9
	bf16Bytes       = 2
	// kvBytesPerToken: K and V, every layer and KV head (128 KiB).
	kvBytesPerToken = 2 * llamaLayers * llamaKVHeads * llamaHeadDim * bf16Bytes
	// linearFLOPsPerToken: a prompt token multiplies through every weight of the body once.
	linearFLOPsPerToken = 2 * llamaBodyParams
	// attentionFLOPsPerPair: QKᵀ and the weighted sum of V, 2 FLOPs each per head dimension.
	attentionFLOPsPerPair = 4 * llamaLayers * llamaHeads * llamaHeadDim
)

// fit is one GPU's figures: BLIS's coefficients (µs, as BLIS publishes them) and the HBM
// bandwidth of the GPU's data sheet.
type fit struct {
	source                 string
	beta0, beta1, beta2    float64
	alpha0, alpha1, alpha2 float64
	hbmBytesPerSec         float64
}

// h100 is BLIS's fit for meta-llama/llama-3.1-8b-instruct on H100, TP=1, vLLM v0.8.4
// (defaults.yaml of github.com/inference-sim/inference-sim): beta 5752.7, 17.251, 5.9991;
// alpha 232.46, 1.7524, 3357.4 (µs).
var h100 = fit{
	source: "BLIS fit (H100, TP=1, vLLM v0.8.4)",
	beta0:  5752.705191348184, beta1: 17.25086436834028, beta2: 5.999143920128404,
	alpha0: 232.46191091038054, alpha1: 1.752360364195244, alpha2: 3357.4400353290152,
	hbmBytesPerSec: 3.35e12, // H100 SXM5 80 GB
}

// fits holds every profile's figures. h100 and a100 are BLIS's own fits; l40s and a10g have none,
// so their GPU terms are H100's scaled by WORKLOADS.md's ratios to H100: step base by the
// batch-1 ITL (25/8, 30/8), per-prefill-token cost by the prefill rate (30,000/8,000,
// 30,000/3,000), per-decode-token cost by the ITL slope from batch 1 to 64 (15/7, 30/7); the
// front end's α0 and α1 (host CPU) stay H100's.
var fits = map[string]fit{
	"h100": h100,
	// BLIS's fit for meta-llama/llama-3.1-8b-instruct on A100-80, TP=1, vLLM v0.8.4.
	"a100": {
		source: "BLIS fit (A100-80, TP=1, vLLM v0.8.4)",
		beta0:  16441.531547147923, beta1: 47.837412108198656, beta2: 18.20560632171683,
		alpha0: 7739.7334212001515, alpha1: 2.308926798943791, alpha2: 6276.246189076296,
		hbmBytesPerSec: 2.039e12, // A100 SXM4 80 GB
	},
	"l40s": scaled(h100, "H100's BLIS fit scaled by WORKLOADS.md ratios (L40S)", 25.0/8, 30000.0/8000, 15.0/7, 864e9),
	"a10g": scaled(h100, "H100's BLIS fit scaled by WORKLOADS.md ratios (A10G)", 30.0/8, 30000.0/3000, 30.0/7, 600e9),
}

// scaled derives a GPU without a BLIS fit from base: its step base (β0 + α2) times base, its
// prefill cost times prefill, its decode cost times decode; the host's α0 and α1 unchanged.
func scaled(from fit, source string, base, prefill, decode, hbm float64) fit {
	f := from
	f.source = source
	f.beta0 = (from.beta0 + from.alpha2) * base
	f.alpha2 = 0
	f.beta1 = from.beta1 * prefill
	f.beta2 = from.beta2 * decode
	f.hbmBytesPerSec = hbm
	return f
}

// coefficients converts a fit to the model's units.
func (f fit) coefficients() Coefficients {
	us := func(v float64) time.Duration { return time.Duration(v * float64(time.Microsecond)) }
	return Coefficients{
		Source:          f.source,
		StepBase:        us(f.beta0 + f.alpha2),
		PrefillTokenNs:  f.beta1 * 1e3,
		DecodeTokenNs:   f.beta2 * 1e3,
		QueueBase:       us(f.alpha0),
		QueueTokenNs:    f.alpha1 * 1e3,
		KVReadTokenNs:   kvBytesPerToken / f.hbmBytesPerSec * 1e9,
		AttentionPairNs: f.beta1 * 1e3 * attentionFLOPsPerPair / linearFLOPsPerToken,
	}
}

// Lookup returns the calibrated coefficients of the GPU profile called name.
func Lookup(name string) (Coefficients, error) {
	f, ok := fits[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Coefficients{}, fmt.Errorf("physics: no calibrated coefficients for profile %q", name)
	}
	return f.coefficients(), nil
}
