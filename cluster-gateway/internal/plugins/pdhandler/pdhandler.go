// Package pdhandler provides llm-d's pd-profile-handler: a config with two scheduling profiles,
// decode and prefill, runs each request through the decode profile, which picks its
// destination, and, when the prompt's part not already cached on that endpoint is at least
// threshold tokens, through the prefill profile too, which picks the endpoint that computes the
// prompt's KV cache for the decode endpoint to pull (the front doors name it to the decode
// endpoint in x-prefiller-host-port). Below the threshold the decode endpoint prefills itself.
//
// With selective set, the handler also weighs the split against the decode endpoint prefilling
// the prompt itself (weigh.go): the prefill endpoint's predicted time to first token plus the KV
// transfer, against the decode endpoint's own, to which is added the stall its local prefill
// brings every sequence of its running batch when that stall is over the ITL budget. It learns
// each endpoint's prefill backlog and speed from the requests it routes (load.go).
package pdhandler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "pd-profile-handler"

func init() { framework.Register(Type, Factory) }

// Params are the handler's parameters.
type Params struct {
	// Threshold is the number of prompt tokens not cached on the chosen decode endpoint (by the
	// decode profile's prefix match) from which a prefill endpoint is used. Default 0: always,
	// when a prefill endpoint is left.
	Threshold int `json:"threshold"`
	// DecodeProfile and PrefillProfile name the two scheduling profiles ("decode", "prefill").
	DecodeProfile  string `json:"decodeProfile"`
	PrefillProfile string `json:"prefillProfile"`
	// HashBlockSize is llm-d's prefix block size for the threshold's cache estimate; accepted for
	// llm-d configs and ignored (the prefix match comes from the decode profile's scorer).
	HashBlockSize int `json:"hashBlockSize"`
	// Selective weighs each split at or above the threshold against the decode endpoint
	// prefilling the prompt itself (decision local-prefill when that costs less). Default false:
	// llm-d's behaviour, every prompt at or above the threshold is split.
	Selective bool `json:"selective"`
	// TransferPerToken is the time the decode endpoint takes to pull one prompt token's KV cache
	// from the prefill endpoint. Default 5µs (Llama-3.1-8B's 128 KiB per token over a 25 GB/s
	// RDMA link).
	TransferPerToken framework.Duration `json:"transferPerToken"`
	// ITLBudget is the stall a running sequence may take from one local prefill at no charge:
	// a local prefill predicted to stall the decode endpoint's batch longer is charged that
	// stall once per running sequence. Default 50ms.
	ITLBudget framework.Duration `json:"itlBudget"`
	// PrefillTokensPerSecond is the prefill speed assumed for an endpoint before any of its
	// prefills was measured (then the mean of the measured endpoints is). Default 10000.
	PrefillTokensPerSecond float64 `json:"prefillTokensPerSecond"`
}

// DefaultParams returns the defaults.
func DefaultParams() Params {
	return Params{
		Threshold:              0,
		DecodeProfile:          "decode",
		PrefillProfile:         "prefill",
		TransferPerToken:       framework.Duration{Duration: 5 * time.Microsecond},
		ITLBudget:              framework.Duration{Duration: 50 * time.Millisecond},
		PrefillTokensPerSecond: 10000,
	}
}

// Validate returns an error naming the invalid parameter.
func (p Params) Validate() error {
	switch {
	case p.Threshold < 0:
		return fmt.Errorf("threshold: %d must be >= 0", p.Threshold)
	case p.DecodeProfile == "" || p.PrefillProfile == "":
		return errors.New("decodeProfile and prefillProfile must not be empty")
	case p.DecodeProfile == p.PrefillProfile:
		return fmt.Errorf("decodeProfile and prefillProfile are both %q", p.DecodeProfile)
	case p.HashBlockSize < 0:
		return fmt.Errorf("hashBlockSize: %d must be >= 0", p.HashBlockSize)
	case p.TransferPerToken.Duration < 0:
		return fmt.Errorf("transferPerToken: %s must be >= 0", p.TransferPerToken.Duration)
	case p.ITLBudget.Duration < 0:
		return fmt.Errorf("itlBudget: %s must be >= 0", p.ITLBudget.Duration)
	case !(p.PrefillTokensPerSecond > 0) || math.IsInf(p.PrefillTokensPerSecond, 0):
		return fmt.Errorf("prefillTokensPerSecond: %v must be > 0", p.PrefillTokensPerSecond)
	}
	return nil
}

// Handler is the pd-profile-handler. It is safe for concurrent use.
type Handler struct {
	name   framework.TypedName
	params Params
	load   *load // nil unless selective
	now    func() time.Time
	log    *slog.Logger
}

var _ framework.DisaggregationHandler = (*Handler)(nil)

// Factory builds the handler from its parameters.
func Factory(name string, raw json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	p := DefaultParams()
	if err := framework.DecodeParams(raw, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", Type, err)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", Type, err)
	}
	if p.HashBlockSize != 0 && h != nil {
		h.Logger().Warn("ignoring pd-profile-handler hashBlockSize: the threshold uses the decode profile's prefix match",
			"plugin", name, "hashBlockSize", p.HashBlockSize)
	}
	hd := New(name, p, h)
	if hd.load != nil && h != nil {
		h.OnRemove(hd.load.forget)
	}
	return hd, nil
}

// New returns a handler named name with params p (validated); h, which may be nil, gives its
// clock and logger.
func New(name string, p Params, h framework.Handle) *Handler {
	hd := &Handler{
		name:   framework.TypedName{Type: Type, Name: name},
		params: p,
		now:    time.Now,
		log:    slog.New(slog.DiscardHandler),
	}
	if h != nil {
		hd.now, hd.log = h.Now, h.Logger()
	}
	if p.Selective {
		hd.load = newLoad(p.PrefillTokensPerSecond)
	}
	return hd
}

// TypedName implements framework.Plugin.
func (h *Handler) TypedName() framework.TypedName { return h.name }

// Profiles implements framework.DisaggregationHandler.
func (h *Handler) Profiles() (decode, prefill string) {
	return h.params.DecodeProfile, h.params.PrefillProfile
}

// NeedsPrefill implements framework.DisaggregationHandler: the prompt tokens not in decode's
// prefix cache (as the decode profile's prefix scorer matched them; none when the profile has
// no such scorer) are at least the threshold.
func (h *Handler) NeedsPrefill(
	_ context.Context,
	cs *framework.CycleState,
	req *framework.Request,
	decode framework.Endpoint,
) bool {
	uncached := req.PromptTokens - framework.ReadPrefixMatch(cs).TokensFor(decode)
	return uncached >= h.params.Threshold
}
