package frontdoor

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/body"

	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

// apiError is an OpenAI-style error answer.
type apiError struct {
	status     int
	typ, code  string
	message    string
	param      string
	retryAfter time.Duration
	overflow   bool
	candidates []routing.Explanation
}

func (e *apiError) write(w http.ResponseWriter) {
	type explained struct {
		Cluster  string `json:"cluster"`
		Region   string `json:"region"`
		Eligible bool   `json:"eligible"`
		Reason   string `json:"reason"`
	}
	body := struct {
		Error struct {
			Message    string      `json:"message"`
			Type       string      `json:"type"`
			Param      *string     `json:"param"`
			Code       string      `json:"code"`
			Candidates []explained `json:"candidates,omitempty"`
		} `json:"error"`
	}{}
	body.Error.Message, body.Error.Type, body.Error.Code = e.message, e.typ, e.code
	if e.param != "" {
		body.Error.Param = &e.param
	}
	for _, c := range e.candidates {
		body.Error.Candidates = append(body.Error.Candidates, explained{c.Cluster, c.Region, c.Eligible, c.Reason})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int((e.retryAfter+time.Second-1)/time.Second)))
	}
	if e.overflow {
		contract.SetOverflow(h)
	}
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(body)
}

func badRequest(msg, param string) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "bad_request", message: msg, param: param}
}

func tooLarge(limit int64) *apiError {
	return &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "request_too_large",
		message: fmt.Sprintf("request body exceeds %d bytes", limit)}
}

func modelNotFound(model string) *apiError {
	return &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "model_not_found", param: "model",
		message: fmt.Sprintf("The model `%s` does not exist or no cluster serves it.", model)}
}

// notAllowed is the answer when the model's residency policy allows no serving cluster: it fails
// closed, with every candidate's reason so the operator can see why.
func notAllowed(model string, d routing.Decision) *apiError {
	var regions []string
	for _, e := range d.Explain {
		if e.Reason != "does not serve the model" {
			regions = append(regions, e.Region)
		}
	}
	return &apiError{status: http.StatusServiceUnavailable, typ: "service_unavailable", code: "residency_policy",
		message: fmt.Sprintf("no cluster serving `%s` is in a region its policy allows (serving regions: %s)",
			model, strings.Join(regions, ", ")), candidates: d.Explain}
}

// Why a request had no policy in force (the reason label of the refusal counter).
const (
	reasonNotLoaded          = "not_loaded"
	reasonUndecodable        = "undecodable"
	outcomePolicyUnavailable = "policy_unavailable"
)

// Retry-After of a policy refusal: the policies may load at the store's next attempt; an
// unreadable policy waits for an operator.
const (
	notLoadedRetry   = 2 * time.Second
	undecodableRetry = 30 * time.Second
)

// policyUnavailable is the 503 for a request whose model has no policy in force: the policies are
// not loaded yet (err then says whether the router keeps requests in its region meanwhile) or the
// model's stored policy cannot be read. The message names no stored value: the reason is for
// operators, in the log and ExplainRoute.
func policyUnavailable(model, reason, region string, err error) *apiError {
	e := &apiError{status: http.StatusServiceUnavailable, typ: "service_unavailable", code: "policy_unavailable", param: "model"}
	switch {
	case reason == reasonUndecodable:
		e.retryAfter = undecodableRetry
		e.message = fmt.Sprintf("the routing policy of model `%s` cannot be read; requests for it are refused until an operator fixes it", model)
	case errors.Is(err, routing.ErrNotAllowed):
		e.retryAfter = notLoadedRetry
		e.message = fmt.Sprintf("routing policies are not loaded yet; meanwhile only region %s is used, and no cluster there serves `%s`; retry later", region, model)
	default:
		e.retryAfter = notLoadedRetry
		e.message = "routing policies are not loaded yet; retry later"
	}
	return e
}

// noRoom is the 429 when every allowed cluster stayed full for the whole bounded wait.
func noRoom(model string, waited time.Duration) *apiError {
	return &apiError{status: http.StatusTooManyRequests, typ: "rate_limit_error", code: "no_capacity", retryAfter: time.Second,
		overflow: true, message: fmt.Sprintf("every cluster serving `%s` is full (waited %v); retry later", model, waited)}
}

// bodyBudgetSpent is the 503 answered when the in-flight body budget cannot hold one more body:
// the request may succeed in a moment, here or at another router.
func bodyBudgetSpent(e *body.BudgetError) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, typ: "service_unavailable", code: "body_budget_exhausted", retryAfter: time.Second,
		message: fmt.Sprintf("the router is buffering %d bytes of request bodies, its limit; retry shortly", e.Budget)}
}

func outcomeOf(status int) string {
	switch status {
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	case http.StatusServiceUnavailable:
		return "body_budget"
	default:
		return "bad_request"
	}
}
