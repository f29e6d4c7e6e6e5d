package frontdoor

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/openai"

	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

// candidate is one cluster of a refusal's candidates: the router-side extra of its error answer
// (openai.Error.Extra), with the reason's human text and its machine code.
type candidate struct {
	Cluster    string          `json:"cluster"`
	Region     string          `json:"region"`
	Eligible   bool            `json:"eligible"`
	Reason     string          `json:"reason"`
	ReasonCode contract.Reason `json:"reason_code"`
}

// candidates is the error object's extra member listing every candidate.
type candidates struct {
	Candidates []candidate `json:"candidates,omitempty"`
}

func candidatesOf(ex []routing.Explanation) candidates {
	var c candidates
	for _, e := range ex {
		c.Candidates = append(c.Candidates, candidate{e.Cluster, e.Region, e.Eligible, e.Reason.Text(), e.Reason})
	}
	return c
}

func badRequest(msg, param string) *openai.Error {
	return &openai.Error{
		Status:  http.StatusBadRequest,
		Type:    openai.TypeInvalidRequest,
		Code:    contract.ReasonBadRequest,
		Message: msg,
		Param:   param,
	}
}

func tooLarge(limit int64) *openai.Error {
	return &openai.Error{
		Status:  http.StatusRequestEntityTooLarge,
		Type:    openai.TypeInvalidRequest,
		Code:    contract.ReasonRequestTooLarge,
		Message: fmt.Sprintf("request body exceeds %d bytes", limit),
	}
}

func modelNotFound(model string) *openai.Error {
	return &openai.Error{
		Status:  http.StatusNotFound,
		Type:    openai.TypeInvalidRequest,
		Code:    contract.ReasonModelNotFound,
		Param:   "model",
		Message: fmt.Sprintf("The model `%s` does not exist or no cluster serves it.", model),
	}
}

// notAllowed is the answer when the model's residency policy allows no serving cluster: it fails
// closed, with every candidate's reason so the operator can see why.
func notAllowed(model string, d routing.Decision) *openai.Error {
	var regions []string
	for _, e := range d.Explain {
		if e.Reason != contract.ReasonNotServed {
			regions = append(regions, e.Region)
		}
	}
	return &openai.Error{
		Status: http.StatusServiceUnavailable,
		Type:   openai.TypeServiceUnavailable,
		Code:   contract.ReasonResidencyPolicy,
		Message: fmt.Sprintf("no cluster serving `%s` is in a region its policy allows (serving regions: %s)",
			model, strings.Join(regions, ", ")),
		Extra: candidatesOf(d.Explain),
	}
}

// outcomePolicyUnavailable is the outcome label of a request refused for want of a policy.
const outcomePolicyUnavailable = "policy_unavailable"

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
func policyUnavailable(model string, reason contract.Reason, region string, err error) *openai.Error {
	e := &openai.Error{
		Status: http.StatusServiceUnavailable,
		Type:   openai.TypeServiceUnavailable,
		Code:   contract.ReasonPolicyUnavailable,
		Param:  "model",
	}
	switch {
	case reason == contract.ReasonUndecodable:
		e.RetryAfterSeconds = openai.RetryAfter(undecodableRetry)
		e.Message = fmt.Sprintf(
			"the routing policy of model `%s` cannot be read; requests for it are refused until an operator fixes it",
			model,
		)
	case errors.Is(err, routing.ErrNotAllowed):
		e.RetryAfterSeconds = openai.RetryAfter(notLoadedRetry)
		e.Message = fmt.Sprintf(
			"routing policies are not loaded yet; meanwhile only region %s is used, and no cluster there serves `%s`; retry later",
			region,
			model,
		)
	default:
		e.RetryAfterSeconds = openai.RetryAfter(notLoadedRetry)
		e.Message = "routing policies are not loaded yet; retry later"
	}
	return e
}

// noRoom is the 429 when every allowed cluster stayed full for the whole bounded wait.
func noRoom(model string, waited time.Duration) *openai.Error {
	return &openai.Error{
		Status:            http.StatusTooManyRequests,
		Type:              openai.TypeRateLimit,
		Code:              contract.ReasonNoCapacity,
		RetryAfterSeconds: 1,
		Overflow:          true,
		Message:           fmt.Sprintf("every cluster serving `%s` is full (waited %v); retry later", model, waited),
	}
}

// bodyBudgetSpent is the 503 answered when the in-flight body budget cannot hold one more body:
// the request may succeed in a moment, here or at another router.
func bodyBudgetSpent(e *body.BudgetError) *openai.Error {
	return &openai.Error{
		Status:            http.StatusServiceUnavailable,
		Type:              openai.TypeServiceUnavailable,
		Code:              contract.ReasonBodyBudgetExhausted,
		RetryAfterSeconds: 1,
		Message: fmt.Sprintf(
			"the router is buffering %d bytes of request bodies, its limit; retry shortly",
			e.Budget,
		),
	}
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
