// Package apierror is the gateway's answer to a request it refuses: an OpenAI-style JSON error
// body with its HTTP status and headers (Retry-After, the overflow marker). Both front doors
// render the same Error, the HTTP proxy on the response and ext_proc as an Envoy immediate
// response, so a client sees one shape whichever door it came through.
package apierror

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/openai"
)

// Error is an error answered to the client as an OpenAI-style JSON body:
// {"error":{"message":...,"type":...,"param":...,"code":...}}. Front doors render it once, at
// the edge, with the HTTP status in Status.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Message is the human-readable message.
	Message string
	// Type is the OpenAI error type, e.g. "invalid_request_error".
	Type string
	// Param names the offending request field, if any.
	Param string
	// Code is a machine-readable code, e.g. "model_not_found".
	Code string
	// Overflow marks a 429 that another cluster may serve (header x-switchyard-overflow: 1).
	Overflow bool
	// RetryAfterSeconds, when > 0, is sent as the Retry-After header.
	RetryAfterSeconds int
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

type errorBody struct {
	Error errorFields `json:"error"`
}

type errorFields struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// JSON returns the OpenAI-style error body.
func (e *Error) JSON() []byte {
	f := errorFields{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		f.Param = &e.Param
	}
	if e.Code != "" {
		f.Code = &e.Code
	}
	b, _ := json.Marshal(errorBody{Error: f}) // cannot fail: strings only
	return b
}

// Headers returns the extra response headers the error carries (Retry-After, overflow marker).
func (e *Error) Headers() http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	if e.RetryAfterSeconds > 0 {
		h.Set("Retry-After", fmt.Sprint(e.RetryAfterSeconds))
	}
	if e.Overflow {
		contract.SetOverflow(h)
	}
	return h
}

// Write renders the error on w.
func (e *Error) Write(w http.ResponseWriter) {
	for k, v := range e.Headers() {
		w.Header()[k] = v
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(e.JSON())
}

// BadRequest is a 400 invalid_request_error.
func BadRequest(msg, param string) *Error {
	return &Error{Status: http.StatusBadRequest, Message: msg, Type: "invalid_request_error", Param: param, Code: "invalid_request"}
}

// ParseError is the 400 for a body openai.Parse refused: a missing model, a routing key given
// twice or in another case (naming the key), or malformed JSON.
func ParseError(err error) *Error {
	return BadRequest(openai.Describe(err))
}

// ModelNotFound is the 404 for a model no ready endpoint serves.
func ModelNotFound(model string) *Error {
	return &Error{
		Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
		Message: fmt.Sprintf("the model %q does not exist or no ready server serves it", model),
	}
}

// TooLarge is the 413 for a body over the limit.
func TooLarge(limit int64) *Error {
	return &Error{
		Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "request_too_large",
		Message: fmt.Sprintf("request body exceeds the limit of %d bytes", limit),
	}
}

// Unavailable is a 503 (no usable endpoint, or the gateway is shutting down).
func Unavailable(msg string, retryAfter int) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Type: "service_unavailable", Code: "no_capacity", Message: msg, RetryAfterSeconds: retryAfter}
}

// Overloaded is the 429 answered when flow control sheds a request; Tier 2 may retry elsewhere.
func Overloaded(msg string, retryAfter int) *Error {
	return &Error{
		Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "overloaded", Message: msg,
		Overflow: true, RetryAfterSeconds: retryAfter,
	}
}
