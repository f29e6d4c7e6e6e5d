package pipeline

import (
	"bytes"
	"time"

	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/openai"
	"github.com/switchyard-dev/switchyard/contract/usagemeter"
)

// Meter watches a model server's response body as it passes through and measures time to first
// token, inter-token latency, output tokens and the usage block (prompt_tokens, completion_tokens,
// prompt_tokens_details.cached_tokens, or the Responses API's input_tokens, output_tokens,
// input_tokens_details.cached_tokens). For SSE bodies of completions and chat completions every
// data event with choices counts as one token event. A Responses API stream is told by its typed
// events (the event: line, or without one the type its data names): each delta event
// (response.output_text.delta, or a refusal, reasoning or function-call-arguments delta) is one
// token event, the lifecycle events (response.created, response.in_progress,
// response.output_item.added, ...) are not tokens, and the usage is read from
// response.completed (or response.incomplete, response.failed), nested in its response. For JSON
// bodies the first body byte stands for the first token.
//
// What a Meter buffers (a JSON body, or an SSE line that spans chunks: usagemeter.Buffer) is
// reserved from the budget of UseBudget, the in-flight body budget, as it grows, and given back
// by Finish: a body or line longer than usagemeter.MaxBuffered, or one the budget cannot hold,
// is passed on unmetered (its usage unknown, Measurement.Unmetered says why) rather than held. A
// Meter is used by one goroutine at a time.
type Meter struct {
	start, first, last time.Time
	sse                bool
	events             int
	budget             *body.Budget
	buf                usagemeter.Buffer
	usage              openai.Usage
	hasUsage           bool
	// kind is what the SSE event being read is, by its event: line; named says it had a
	// Responses API name.
	kind  eventKind
	named bool
}

// eventKind is what an SSE event means to the meter.
type eventKind uint8

const (
	// kindChunk is a completions or chat completions chunk (an event with no Responses API
	// name): a token event unless its choices are empty; it may carry the usage.
	kindChunk eventKind = iota
	// kindDelta is a Responses API delta event: one token event.
	kindDelta
	// kindFinal is response.completed, response.incomplete or response.failed: it carries the
	// response, and its usage.
	kindFinal
	// kindLifecycle is any other Responses API event: neither a token nor the usage.
	kindLifecycle
)

// responsesPrefix starts the name of every Responses API stream event.
const responsesPrefix = "response."

// kindOf classifies an event by its Responses API name; ok is false for any other name.
func kindOf(name []byte) (kind eventKind, ok bool) {
	rest, ok := bytes.CutPrefix(name, []byte(responsesPrefix))
	if !ok {
		return kindChunk, false
	}
	switch {
	case bytes.HasSuffix(rest, []byte(".delta")):
		return kindDelta, true
	case string(rest) == "completed", string(rest) == "incomplete", string(rest) == "failed":
		return kindFinal, true
	}
	return kindLifecycle, true
}

// Measurement is what a Meter observed.
type Measurement struct {
	// TTFT is from the request being sent to the first token (0 if none arrived).
	TTFT time.Duration
	// MeanITL is the mean gap between token events after the first (0 with fewer than two).
	MeanITL time.Duration
	// OutputTokens is usage.completion_tokens (output_tokens) when reported, else the number of
	// token events.
	OutputTokens int
	// PromptTokens is usage.prompt_tokens (input_tokens), or -1 when not reported.
	PromptTokens int
	// CachedTokens is usage.prompt_tokens_details.cached_tokens (input_tokens_details'), or -1
	// when not reported.
	CachedTokens int
	// Unmetered is why part of the body was not metered (usagemeter.ReasonTooLarge,
	// usagemeter.ReasonBudget), "" when all of it was.
	Unmetered string
}

// UseBudget makes m reserve what it buffers from budget (nil: no budget). Call it before Reset.
func (m *Meter) UseBudget(budget *body.Budget) { m.budget = budget }

// Reset prepares m for a response to a request sent at start; sse selects SSE parsing
// (Content-Type text/event-stream) over JSON. It gives back what m buffered.
func (m *Meter) Reset(start time.Time, sse bool) {
	m.buf.Release()
	*m = Meter{start: start, sse: sse, budget: m.budget}
	m.buf.Reset(sse, m.budget)
}

// Write observes a chunk of the body that arrived at now.
func (m *Meter) Write(p []byte, now time.Time) {
	if len(p) == 0 {
		return
	}
	if !m.sse {
		if m.first.IsZero() {
			m.first = now
		}
		m.last = now
	}
	m.buf.Write(p, func(line []byte) { m.line(line, now) })
}

// line handles one complete SSE line: a blank line ends an event, an event: line names it, a
// data: line is metered by the event's kind.
func (m *Meter) line(line []byte, now time.Time) {
	line = bytes.TrimRight(line, "\r")
	if len(line) == 0 {
		m.kind, m.named = kindChunk, false
		return
	}
	if name, ok := bytes.CutPrefix(line, []byte("event:")); ok {
		m.kind, m.named = kindOf(bytes.TrimSpace(name))
		return
	}
	payload, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return
	}
	payload = bytes.TrimSpace(payload)
	if len(payload) == 0 || bytes.Equal(payload, []byte("[DONE]")) {
		return
	}
	kind := m.kind
	if !m.named && bytes.Contains(payload, []byte(`"`+responsesPrefix)) {
		kind, _ = kindOf(openai.EventType(payload)) // a Responses API event sent without its name
	}
	switch kind {
	case kindDelta:
		m.token(now)
	case kindFinal:
		m.parseUsage(payload)
	case kindChunk:
		m.chunk(payload, now)
	}
}

// chunk meters a completions or chat completions chunk.
func (m *Meter) chunk(payload []byte, now time.Time) {
	if hasObject(payload, `"usage"`) {
		m.parseUsage(payload)
	}
	if !hasEmptyArray(payload, `"choices"`) {
		m.token(now)
	}
}

// token counts one token event that arrived at now.
func (m *Meter) token(now time.Time) {
	if m.first.IsZero() {
		m.first = now
	}
	m.last = now
	m.events++
}

func (m *Meter) parseUsage(payload []byte) {
	if u, ok := openai.ParseUsage(payload); ok {
		m.usage, m.hasUsage = u, true
	}
}

// Tokens is the number of token events seen so far (1 once a JSON body started).
func (m *Meter) Tokens() int {
	if !m.sse && !m.first.IsZero() {
		return 1
	}
	return m.events
}

// TTFT is the time from the request being sent to the first token, 0 before it arrived.
func (m *Meter) TTFT() time.Duration {
	if m.first.IsZero() {
		return 0
	}
	return m.first.Sub(m.start)
}

// Finish returns the measurement and gives back the buffer. For JSON bodies it parses the
// buffered body's usage.
func (m *Meter) Finish() Measurement {
	if u, ok := m.buf.Usage(); ok {
		m.usage, m.hasUsage = u, true
	}
	m.buf.Release()
	out := Measurement{PromptTokens: -1, CachedTokens: -1, OutputTokens: m.events, Unmetered: m.buf.Unmetered()}
	if !m.first.IsZero() {
		out.TTFT = m.first.Sub(m.start)
		if m.events > 1 {
			out.MeanITL = m.last.Sub(m.first) / time.Duration(m.events-1)
		}
	}
	if m.hasUsage {
		out.PromptTokens, out.OutputTokens = m.usage.PromptTokens, m.usage.CompletionTokens
		if m.usage.HasCached {
			out.CachedTokens = m.usage.CachedTokens
		}
	}
	return out
}

// hasObject reports whether key is followed (after a colon and spaces) by an object.
func hasObject(data []byte, key string) bool {
	return valueStartsWith(data, key, '{')
}

// hasEmptyArray reports whether key is followed by an empty array.
func hasEmptyArray(data []byte, key string) bool {
	if !valueStartsWith(data, key, '[') {
		return false
	}
	i := bytes.Index(data, []byte(key))
	rest := bytes.TrimLeft(data[i+len(key):], " \t:")
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	return len(rest) > 0 && rest[0] == ']'
}

func valueStartsWith(data []byte, key string, c byte) bool {
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return false
	}
	rest := bytes.TrimLeft(data[i+len(key):], " \t")
	if len(rest) == 0 || rest[0] != ':' {
		return false
	}
	rest = bytes.TrimLeft(rest[1:], " \t")
	return len(rest) > 0 && rest[0] == c
}
