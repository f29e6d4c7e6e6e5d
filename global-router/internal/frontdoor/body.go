package frontdoor

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/openai"
)

// budgetWarnEvery spaces the warnings of a spent body budget: under a flood of stalled uploads
// every refusal is counted, but only one a second is logged.
const budgetWarnEvery = time.Second

// readBody reads the whole body into a buffer that grows as its bytes arrive (never sized from
// Content-Length alone), reserved from the body budget until the caller releases it. A body over
// MaxBodyBytes is a 413, a spent budget a 503 with Retry-After, a failed read a 400.
func (s *Server) readBody(r *http.Request) (*body.Buffer, *openai.Error) {
	buf, err := body.Read(r.Body, body.Options{Limit: s.cfg.MaxBodyBytes, Declared: r.ContentLength, Budget: s.cfg.Bodies})
	var spent *body.BudgetError
	switch {
	case err == nil:
		return buf, nil
	case errors.Is(err, body.ErrTooLarge):
		s.log.Debug(
			"request body refused",
			"reason",
			"too_large",
			"limit_bytes",
			s.cfg.MaxBodyBytes,
			"declared_bytes",
			r.ContentLength,
		)
		return nil, tooLarge(s.cfg.MaxBodyBytes)
	case errors.As(err, &spent):
		s.warnBudget(spent)
		return nil, bodyBudgetSpent(spent)
	}
	return nil, badRequest(err.Error(), "")
}

// warnBudget logs a spent budget unless it was logged less than budgetWarnEvery ago.
func (s *Server) warnBudget(e *body.BudgetError) {
	now := time.Now().UnixNano()
	last := s.lastWarn.Load()
	if now-last < int64(budgetWarnEvery) || !s.lastWarn.CompareAndSwap(last, now) {
		return
	}
	s.log.LogAttrs(context.Background(), slog.LevelWarn, "request body budget spent; refusing bodies with 503",
		slog.Int64("budget_bytes", e.Budget), slog.Int64("in_use_bytes", s.cfg.Bodies.InUse()),
		slog.Uint64("refused_total", s.cfg.Bodies.Refused()))
}
