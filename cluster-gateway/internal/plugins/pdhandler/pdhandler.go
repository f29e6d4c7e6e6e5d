// Package pdhandler provides llm-d's pd-profile-handler: a config with two scheduling profiles,
// decode and prefill, runs each request through the decode profile, which picks its
// destination, and, when the prompt's part not already cached on that endpoint is at least
// threshold tokens, through the prefill profile too, which picks the endpoint that computes the
// prompt's KV cache for the decode endpoint to pull (the front doors name it to the decode
// endpoint in x-prefiller-host-port). Below the threshold the decode endpoint prefills itself.
package pdhandler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
}

// DefaultParams returns the defaults.
func DefaultParams() Params {
	return Params{Threshold: 0, DecodeProfile: "decode", PrefillProfile: "prefill"}
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
	}
	return nil
}

// Handler is the pd-profile-handler.
type Handler struct {
	name   framework.TypedName
	params Params
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
	return New(name, p), nil
}

// New returns a handler named name with params p (validated).
func New(name string, p Params) *Handler {
	return &Handler{name: framework.TypedName{Type: Type, Name: name}, params: p}
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
