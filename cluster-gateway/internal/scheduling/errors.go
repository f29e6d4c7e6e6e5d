package scheduling

import (
	"errors"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Errors returned by Schedule; the front doors translate them once, at the edge.
var (
	// ErrUnknownModel: no endpoint serves the requested model or adapter (HTTP 404).
	ErrUnknownModel = errors.New("scheduling: no endpoint serves the model")
	// ErrNoEndpoints: the model is served but no endpoint is usable (HTTP 503).
	ErrNoEndpoints = errors.New("scheduling: no usable endpoint")
	// ErrSaturated: every candidate is saturated; flow control may queue the request, else 429.
	// It is framework.ErrSaturated, the one saturation outcome (framework.IsSaturated).
	ErrSaturated = framework.ErrSaturated
	// ErrSLOUnattainable: no candidate is predicted to meet a sheddable request's latency
	// objectives (the slo-filter); 429 with the overflow marker, never queued.
	ErrSLOUnattainable = framework.ErrSLOUnattainable
)
