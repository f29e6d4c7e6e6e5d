package framework

import (
	"errors"
	"time"
)

// SLO is a request's latency objectives (x-slo-ttft-ms, x-slo-tpot-ms); a zero field is no
// objective.
type SLO struct {
	// TTFT is the time-to-first-token objective, from the request's arrival at the gateway
	// (Request.Arrived) to its first token.
	TTFT time.Duration
	// TPOT is the time-per-output-token objective: the mean gap between output tokens after the
	// first.
	TPOT time.Duration
}

// IsZero reports whether s sets no objective.
func (s SLO) IsZero() bool { return s.TTFT <= 0 && s.TPOT <= 0 }

// ErrSLOUnattainable is the scheduling outcome "no candidate is predicted to meet the sheddable
// request's latency objectives" (the slo-filter). The front doors answer it 429 with
// x-switchyard-overflow (another cluster may meet them); flow control does not queue it.
var ErrSLOUnattainable = errors.New("scheduling: no endpoint is predicted to meet the request's latency objectives")

// Refuser is a Filter that may refuse a request outright: when the filter keeps no endpoint, the
// scheduler returns Refusal's error (nil: the usual "no endpoints" or saturation outcome) instead.
type Refuser interface {
	Filter
	// Refusal returns why req was refused, having left no candidate.
	Refusal(req *Request) error
}

// Binder is an optional plugin hook, found by type assertion: Bind is called once the profile is
// built, with it, so a plugin can find the plugins it works with (the slo-filter finds the
// profile's latency model). An error fails the build.
type Binder interface {
	Plugin
	Bind(p *Profile) error
}
