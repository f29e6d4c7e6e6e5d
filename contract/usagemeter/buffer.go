// Package usagemeter holds what both tiers buffer of a model server's answer, as it passes
// through to the client, to read the usage the server reports: a JSON body whole, or an SSE
// stream line by line. What it buffers is reserved from the in-flight body budget
// (contract/body) as it grows and given back by Release, at most MaxBuffered of one body or
// line; a body or line that does not fit (too long, or the budget is spent) is skipped whole,
// never spliced from its ends, and the first reason is kept (Unmetered) for the caller to count.
// Each tier reads the lines its own way: the gateway's meter times the token events, the router's
// strips the usage chunk it asked for.
package usagemeter

import (
	"bytes"
	"errors"

	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/openai"
)

// MaxBuffered bounds what a Buffer holds of one SSE line or of a JSON body.
const MaxBuffered = 1 << 20

// Why part of an answer was not metered (the reason label of both tiers' unmetered counters).
const (
	// ReasonTooLarge: a JSON body or one SSE line longer than MaxBuffered.
	ReasonTooLarge = "too_large"
	// ReasonBudget: the in-flight body budget could not hold the buffer's growth.
	ReasonBudget = "budget"
)

// Reasons lists every reason, for callers that initialise their counters.
var Reasons = []string{ReasonTooLarge, ReasonBudget}

// Reason is the reason for an error of body.Buffer.Append: ReasonBudget when the budget was
// spent, else ReasonTooLarge.
func Reason(err error) string {
	if errors.Is(err, body.ErrBudgetExhausted) {
		return ReasonBudget
	}
	return ReasonTooLarge
}

// Buffer buffers an answer's body (JSON) or its current SSE line. The zero Buffer holds nothing
// and has no budget; Reset prepares it. A Buffer is used by one goroutine at a time.
type Buffer struct {
	carry body.Buffer
	sse   bool
	// skip drops the rest of the JSON body, or of the SSE line, that did not fit; unmetered is
	// why (the first reason).
	skip      bool
	unmetered string
}

// Reset gives back what b holds and prepares it for an answer: sse selects SSE lines (Content-Type
// text/event-stream) over a JSON body; what it buffers is reserved from budget (nil: none).
func (b *Buffer) Reset(sse bool, budget *body.Budget) {
	b.carry.Release()
	*b = Buffer{sse: sse}
	b.carry.Reset(body.Options{Limit: MaxBuffered, Budget: budget})
}

// Write takes the next bytes of the answer. For a JSON body they are held (until Usage); for SSE,
// line is called with each complete line that fit (its '\n' cut, any '\r' left), at once when the
// line is whole in p, else from the buffer; line must not keep it.
func (b *Buffer) Write(p []byte, line func(line []byte)) {
	if !b.sse {
		b.hold(p)
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			b.hold(p)
			return
		}
		l := p[:i]
		if b.carry.Len() > 0 {
			b.hold(l)
			l = b.carry.Bytes()
		}
		if !b.skip {
			line(l)
		}
		b.carry.Clear()
		b.skip, p = false, p[i+1:] // the next line starts afresh
	}
}

// hold appends p to the buffer; when it does not fit (too long, or the budget is spent) the
// buffer is given back and the rest of the body or line skipped.
func (b *Buffer) hold(p []byte) {
	if b.skip {
		return
	}
	if err := b.carry.Append(p); err != nil {
		b.skip = true
		b.carry.Release() // the buffer is given back: the rest is not read
		if b.unmetered == "" {
			b.unmetered = Reason(err)
		}
	}
}

// Usage parses the usage of a JSON body held whole; ok is false for SSE, for a body that did not
// fit and for one without a usage object.
func (b *Buffer) Usage() (u openai.Usage, ok bool) {
	if b.sse || b.skip || b.carry.Len() == 0 {
		return openai.Usage{}, false
	}
	return openai.ParseUsage(b.carry.Bytes())
}

// Unmetered is why part of the answer was skipped (ReasonTooLarge, ReasonBudget), "" when none
// was.
func (b *Buffer) Unmetered() string { return b.unmetered }

// Release gives back what b holds to the budget.
func (b *Buffer) Release() { b.carry.Release() }
