// Package apierror is the gateway's answer to a request it refuses: an OpenAI-style JSON error
// body with its HTTP status and headers (Retry-After, the overflow marker). Both front doors
// render the same Error, the HTTP proxy on the response and ext_proc as an Envoy immediate
// response, so a client sees one shape whichever door it came through.
package apierror

import (
	"fmt"
	"net/http"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/openai"
)

// Error is the OpenAI-style error answer both tiers write, contract/openai.Error; the
// constructors below build the gateway's.
type Error = openai.Error

// BadRequest is a 400 invalid_request_error.
func BadRequest(msg, param string) *Error {
	return &Error{
		Status:  http.StatusBadRequest,
		Message: msg,
		Type:    openai.TypeInvalidRequest,
		Param:   param,
		Code:    contract.ReasonInvalidRequest,
	}
}

// ParseError is the 400 for a body openai.Parse refused: a missing model, a routing key given
// twice or in another case (naming the key), or malformed JSON.
func ParseError(err error) *Error {
	return BadRequest(openai.Describe(err))
}

// ModelNotFound is the 404 for a model no ready endpoint serves.
func ModelNotFound(model string) *Error {
	return &Error{
		Status: http.StatusNotFound, Type: openai.TypeInvalidRequest, Param: "model", Code: contract.ReasonModelNotFound,
		Message: fmt.Sprintf("the model %q does not exist or no ready server serves it", model),
	}
}

// TooLarge is the 413 for a body over the limit.
func TooLarge(limit int64) *Error {
	return &Error{
		Status: http.StatusRequestEntityTooLarge, Type: openai.TypeInvalidRequest, Code: contract.ReasonRequestTooLarge,
		Message: fmt.Sprintf("request body exceeds the limit of %d bytes", limit),
	}
}

// Unavailable is a 503 (no usable endpoint, or the gateway is shutting down).
func Unavailable(msg string, retryAfter int) *Error {
	return &Error{
		Status:            http.StatusServiceUnavailable,
		Type:              openai.TypeServiceUnavailable,
		Code:              contract.ReasonNoCapacity,
		Message:           msg,
		RetryAfterSeconds: retryAfter,
	}
}

// Overloaded is the 429 answered when flow control sheds a request; Tier 2 may retry elsewhere.
func Overloaded(msg string, retryAfter int) *Error {
	return &Error{
		Status: http.StatusTooManyRequests, Type: openai.TypeRateLimit, Code: contract.ReasonOverloaded, Message: msg,
		Overflow: true, RetryAfterSeconds: retryAfter,
	}
}

// SLOUnattainable is the 429 for a sheddable request whose latency objectives no pod is
// predicted to meet; another cluster may meet them, so it carries the overflow marker.
func SLOUnattainable(msg string, retryAfter int) *Error {
	return &Error{
		Status: http.StatusTooManyRequests, Type: openai.TypeRateLimit, Code: contract.ReasonSLOUnattainable, Message: msg,
		Overflow: true, RetryAfterSeconds: retryAfter,
	}
}
