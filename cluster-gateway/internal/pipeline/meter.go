package pipeline

import (
	"bytes"
	"time"

	"github.com/switchyard-dev/switchyard/contract/openai"
)

// maxMeteredLine bounds what a Meter buffers of one SSE line or of a JSON response body.
const maxMeteredLine = 1 << 20

// Meter watches a model server's response body as it passes through and measures time to first
// token, inter-token latency, output tokens and the usage block (prompt_tokens, completion_tokens,
// prompt_tokens_details.cached_tokens). For SSE bodies every data event with choices counts as one
// token event; for JSON bodies the first body byte stands for the first token. A Meter is used by
// one goroutine at a time.
type Meter struct {
	start, first, last time.Time
	sse                bool
	events             int
	carry              []byte
	usage              openai.Usage
	hasUsage           bool
}

// Measurement is what a Meter observed.
type Measurement struct {
	// TTFT is from the request being sent to the first token (0 if none arrived).
	TTFT time.Duration
	// MeanITL is the mean gap between token events after the first (0 with fewer than two).
	MeanITL time.Duration
	// OutputTokens is usage.completion_tokens when reported, else the number of token events.
	OutputTokens int
	// PromptTokens is usage.prompt_tokens, or -1 when not reported.
	PromptTokens int
	// CachedTokens is usage.prompt_tokens_details.cached_tokens, or -1 when not reported.
	CachedTokens int
}

// Reset prepares m for a response to a request sent at start; sse selects SSE parsing
// (Content-Type text/event-stream) over JSON.
func (m *Meter) Reset(start time.Time, sse bool) {
	*m = Meter{start: start, sse: sse, carry: m.carry[:0]}
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
		if len(m.carry)+len(p) <= maxMeteredLine {
			m.carry = append(m.carry, p...)
		}
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(m.carry)+len(p) <= maxMeteredLine {
				m.carry = append(m.carry, p...)
			}
			return
		}
		line := p[:i]
		if len(m.carry) > 0 {
			m.carry = append(m.carry, line...)
			line = m.carry
		}
		m.line(line, now)
		m.carry = m.carry[:0]
		p = p[i+1:]
	}
}

// line handles one complete SSE line.
func (m *Meter) line(line []byte, now time.Time) {
	line = bytes.TrimRight(line, "\r")
	payload, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return
	}
	payload = bytes.TrimSpace(payload)
	if len(payload) == 0 || bytes.Equal(payload, []byte("[DONE]")) {
		return
	}
	if hasObject(payload, `"usage"`) {
		m.parseUsage(payload)
	}
	if hasEmptyArray(payload, `"choices"`) {
		return
	}
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

// Finish returns the measurement. For JSON bodies it parses the buffered body's usage.
func (m *Meter) Finish() Measurement {
	if !m.sse && len(m.carry) > 0 {
		m.parseUsage(m.carry)
	}
	out := Measurement{PromptTokens: -1, CachedTokens: -1, OutputTokens: m.events}
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
