package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/openai"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
)

// Front doors, as the door label of the body metrics.
const (
	DoorHTTP    = "http"
	DoorExtProc = "ext_proc"
)

// Reasons a request body is refused, as the reason label of the body metrics.
const (
	bodyTooLarge = "too_large"
	bodyBudget   = "budget"
	bodyTimeout  = "timeout"
	bodyForm     = "malformed_form"
)

// budgetWarnEvery spaces the warnings of a spent body budget: under a flood of stalled uploads
// every refusal is counted, but only one a second is logged.
const budgetWarnEvery = time.Second

// BodyOptions are the options of a request body read by a front door: the body limit, the
// declared length and the shared budget.
func (p *Pipeline) BodyOptions(declared int64) body.Options {
	return body.Options{Limit: p.router.MaxBodyBytes(), Declared: declared, Budget: p.bodies}
}

// BodyBudget is the budget both front doors' request bodies are reserved from (nil: none).
func (p *Pipeline) BodyBudget() *body.Budget { return p.bodies }

// BodyTimeoutError is a request body that did not arrive in whole within the front door's
// deadline: a client (or the proxy in front) that trickles or stalls its body would otherwise
// hold a request slot and its body buffer for as long as it likes.
type BodyTimeoutError struct {
	// Timeout is the deadline that passed, counted from the request headers.
	Timeout time.Duration
	// Received is the number of body bytes that had arrived, -1 when the front door does not
	// know it.
	Received int64
}

// Error implements error.
func (e *BodyTimeoutError) Error() string {
	return fmt.Sprintf("the request body did not arrive within %s", e.Timeout)
}

// RefuseBody translates a body error for the client, counts it by door and reason, and logs
// it: a body over the limit (a *body.TooLargeError) is a 413 (logged at debug level), a spent
// budget (a *body.BudgetError) a 503 with Retry-After (a warning, at most one a second), a body
// that did not arrive in time (a *BodyTimeoutError) a 408 (logged at info level, with the bytes
// received). Other errors give nil.
func (p *Pipeline) RefuseBody(door string, err error) *apierror.Error {
	var tooLarge *body.TooLargeError
	var spent *body.BudgetError
	var late *BodyTimeoutError
	switch {
	case errors.As(err, &tooLarge):
		p.metrics.bodyRefused.WithLabelValues(door, bodyTooLarge).Inc()
		p.log.Debug("request body refused", "door", door, "reason", bodyTooLarge, "limit_bytes", tooLarge.Limit)
		return apierror.TooLarge(tooLarge.Limit)
	case errors.As(err, &spent):
		p.metrics.bodyRefused.WithLabelValues(door, bodyBudget).Inc()
		p.warnBudget(door, spent)
		return BudgetExhausted(spent)
	case errors.As(err, &late):
		p.SlowBody(door, late)
		return RequestTimeout(late)
	}
	return nil
}

// RefuseForm translates the error of a multipart body on a pass-through path (openai.ReadForm,
// or the rest of the body read while it streamed to a model server) for the client: a
// *openai.FormError (malformed, no model field, a second one) is a 400 naming the field, counted
// and logged at debug level; the errors RefuseBody knows are answered as it answers them; any
// other (the client's read failing) is a 400.
func (p *Pipeline) RefuseForm(door string, err error) *apierror.Error {
	var fe *openai.FormError
	if errors.As(err, &fe) {
		p.metrics.bodyRefused.WithLabelValues(door, bodyForm).Inc()
		p.log.Debug("request body refused", "door", door, "reason", bodyForm, "err", err)
		return apierror.BadRequest("invalid request body: "+fe.Reason, fe.Param)
	}
	if e := p.RefuseBody(door, err); e != nil {
		return e
	}
	return apierror.BadRequest(err.Error(), "")
}

// SlowBody counts and logs a request body that did not arrive within its deadline. RefuseBody
// calls it; a front door that answers such a body in its own way calls it directly.
func (p *Pipeline) SlowBody(door string, e *BodyTimeoutError) {
	p.metrics.bodyRefused.WithLabelValues(door, bodyTimeout).Inc()
	attrs := []slog.Attr{
		slog.String("door", door),
		slog.String("reason", bodyTimeout),
		slog.Duration("timeout", e.Timeout),
	}
	if e.Received >= 0 {
		attrs = append(attrs, slog.Int64("received_bytes", e.Received))
	}
	p.log.LogAttrs(context.Background(), slog.LevelInfo, "request body refused: not received in time", attrs...)
}

// BudgetExhausted is the 503 answered when the in-flight body budget cannot hold one more body:
// the request may succeed in a moment, here or on another replica.
func BudgetExhausted(e *body.BudgetError) *apierror.Error {
	return &apierror.Error{
		Status: http.StatusServiceUnavailable,
		Type:   openai.TypeServiceUnavailable,
		Code:   contract.ReasonBodyBudgetExhausted,
		Message: fmt.Sprintf(
			"the gateway is buffering %d bytes of request bodies, its limit; retry shortly",
			e.Budget,
		),
		RetryAfterSeconds: 1,
	}
}

// RequestTimeout is the 408 answered when a request body did not arrive within its deadline:
// the client was too slow, so neither another replica nor another cluster is tried.
func RequestTimeout(e *BodyTimeoutError) *apierror.Error {
	return &apierror.Error{
		Status:  http.StatusRequestTimeout,
		Type:    openai.TypeInvalidRequest,
		Code:    contract.ReasonRequestTimeout,
		Message: e.Error(),
	}
}

// warnBudget logs a spent budget unless it was logged less than budgetWarnEvery ago.
func (p *Pipeline) warnBudget(door string, e *body.BudgetError) {
	now := p.now().UnixNano()
	last := p.lastWarn.Load()
	if now-last < int64(budgetWarnEvery) || !p.lastWarn.CompareAndSwap(last, now) {
		return
	}
	p.log.LogAttrs(context.Background(), slog.LevelWarn, "request body budget spent; refusing bodies with 503",
		slog.String("door", door), slog.Int64("budget_bytes", e.Budget), slog.Int64("in_use_bytes", p.bodies.InUse()),
		slog.Uint64("refused_total", p.bodies.Refused()))
}
