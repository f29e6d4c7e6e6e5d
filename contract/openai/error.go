package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
)

// OpenAI error types (Error.Type) the tiers answer with.
const (
	TypeInvalidRequest     = "invalid_request_error"
	TypeRateLimit          = "rate_limit_error"
	TypeServiceUnavailable = "service_unavailable"
	TypeUpstream           = "upstream_error"
	TypeCancelled          = "cancelled"
)

// Error is an error answered to the client as an OpenAI-style JSON body, by both tiers:
//
//	{"error":{"message":...,"type":...,"param":...,"code":...}}
//
// param and code are null when empty. Front doors render it once, at the edge (Write, or JSON
// and Headers for Envoy's immediate response), with the HTTP status in Status.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Message is the human-readable message.
	Message string
	// Type is the OpenAI error type, e.g. TypeInvalidRequest.
	Type string
	// Param names the offending request field or header, if any.
	Param string
	// Code is the machine-readable reason, e.g. contract.ReasonModelNotFound.
	Code contract.Reason
	// Overflow marks a 429 that another cluster may serve (header x-switchyard-overflow: 1).
	Overflow bool
	// RetryAfterSeconds, when > 0, is sent as the Retry-After header.
	RetryAfterSeconds int
	// Extra, when not nil, marshals (encoding/json) to a JSON object whose members are written
	// in the error object after code: a tier's own details, such as the router's candidates.
	Extra any
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// RetryAfter returns d as Error.RetryAfterSeconds: whole seconds, rounded up.
func RetryAfter(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
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

// JSON returns the OpenAI-style error body (no trailing newline). Any message bytes give valid
// JSON: bytes that are not UTF-8 become U+FFFD, as encoding/json writes them.
func (e *Error) JSON() []byte {
	f := errorFields{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		f.Param = &e.Param
	}
	if e.Code != "" {
		code := string(e.Code)
		f.Code = &code
	}
	b, _ := json.Marshal(errorBody{Error: f}) // cannot fail: strings only
	if e.Extra == nil {
		return b
	}
	extra, err := json.Marshal(e.Extra)
	if err != nil || len(extra) < 2 || extra[0] != '{' {
		return b // not an object: the standard members only
	}
	members := bytes.TrimSpace(extra[1 : len(extra)-1])
	if len(members) == 0 {
		return b
	}
	// b ends with "}}": the error object's members go before the first of them.
	out := make([]byte, 0, len(b)+len(members)+1)
	out = append(out, b[:len(b)-2]...)
	out = append(out, ',')
	out = append(out, members...)
	return append(out, "}}"...)
}

// Headers returns the response headers the error carries: Content-Type, Retry-After and the
// overflow marker.
func (e *Error) Headers() http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	if e.RetryAfterSeconds > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfterSeconds))
	}
	if e.Overflow {
		contract.SetOverflow(h)
	}
	return h
}

// Write renders the error on w: its headers, its status and its JSON body, ended by a newline.
func (e *Error) Write(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range e.Headers() {
		h[k] = v
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(append(e.JSON(), '\n'))
}
