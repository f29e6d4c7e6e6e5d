package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/switchyard-dev/switchyard/contract/body"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/bbr"
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

// RefuseBody translates a body error of package body for the client, counts it by door and
// reason, and logs it: a body over the limit is a 413 (logged at debug level), a spent budget a
// 503 with Retry-After (a warning, at most one a second). Other errors give nil.
func (p *Pipeline) RefuseBody(door string, err error) *bbr.Error {
	var tooLarge *body.TooLargeError
	var spent *body.BudgetError
	switch {
	case errors.As(err, &tooLarge):
		p.metrics.bodyRefused.WithLabelValues(door, bodyTooLarge).Inc()
		p.log.Debug("request body refused", "door", door, "reason", bodyTooLarge, "limit_bytes", tooLarge.Limit)
		return bbr.TooLarge(tooLarge.Limit)
	case errors.As(err, &spent):
		p.metrics.bodyRefused.WithLabelValues(door, bodyBudget).Inc()
		p.warnBudget(door, spent)
		return BudgetExhausted(spent)
	}
	return nil
}

// BudgetExhausted is the 503 answered when the in-flight body budget cannot hold one more body:
// the request may succeed in a moment, here or on another replica.
func BudgetExhausted(e *body.BudgetError) *bbr.Error {
	return &bbr.Error{Status: http.StatusServiceUnavailable, Type: "service_unavailable", Code: "body_budget_exhausted",
		Message:           fmt.Sprintf("the gateway is buffering %d bytes of request bodies, its limit; retry shortly", e.Budget),
		RetryAfterSeconds: 1}
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
