package frontdoor

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/switchyard-dev/switchyard/contract/openai"

	"github.com/switchyard-dev/switchyard/global-router/internal/limiter"
)

// askUsage returns the body to forward for a request charged to a token limit. A streamed
// completions or chat completions request whose client did not ask for the usage chunk is
// forwarded asking for it (openai.AppendIncludeUsage: stream_options.include_usage true, every
// other byte as sent), so that its tokens are charged from the usage the model server reports
// rather than its reservation; strip is then true, for the meter to drop that chunk from the
// client's stream. The copy is reserved from the body budget until release; when the budget is
// spent the body goes as sent (and the request stays charged its reservation).
func (s *Server) askUsage(
	path string,
	data []byte,
	b *openai.Body,
	lease *limiter.Lease,
) (out []byte, strip bool, release func()) {
	none := func() {}
	if !lease.Metered() || !b.NeedsUsage() || (path != openai.PathChatCompletions && path != openai.PathCompletions) {
		return data, false, none
	}
	size := int64(len(data) + openai.MaxIncludeUsageGrowth)
	if s.cfg.Bodies != nil {
		if err := s.cfg.Bodies.Reserve(size); err != nil {
			s.metrics.tenant.usageAsked.WithLabelValues(usageBudgetSpent).Inc()
			s.log.Debug("stream forwarded without asking for usage: body budget spent", "bytes", size)
			return data, false, none
		}
		release = func() { s.cfg.Bodies.Release(size) }
	} else {
		release = none
	}
	s.metrics.tenant.usageAsked.WithLabelValues(usageAsked).Inc()
	return b.AppendIncludeUsage(make([]byte, 0, size), data), true, release
}

// usageMeter watches an answer's body on its way to the client for the usage the model server
// reports: the last SSE data event with a usage object, or a JSON body's usage (bounded). With
// strip set (the router asked the stream for a usage chunk its client did not ask for), it holds
// each SSE event back until the blank line that ends it and drops the usage-only chunk
// (openai.IsUsageChunk), so the client receives the events it asked for.
type usageMeter struct {
	http.ResponseWriter
	strip bool
	sse   bool
	head  bool
	carry []byte // the current line's bytes so far (a JSON body's, when not SSE)
	event []byte // strip: the current event's complete lines, not yet written
	spill bool   // strip: the current event outgrew maxMeteredBytes and is passed through
	mid   bool   // spill: the current line has more than white space so far
	drop  bool   // strip: the current event is the usage chunk
	usage openai.Usage
	found bool
}

// maxMeteredBytes bounds what the meter buffers of one SSE line or event, or of a JSON body.
const maxMeteredBytes = 1 << 20

func (m *usageMeter) Unwrap() http.ResponseWriter { return m.ResponseWriter }

func (m *usageMeter) Write(p []byte) (int, error) {
	if !m.head {
		m.head = true
		m.sse = strings.HasPrefix(m.Header().Get("Content-Type"), "text/event-stream")
	}
	if !m.sse || !m.strip {
		m.observe(p)
		return m.ResponseWriter.Write(p)
	}
	if err := m.filter(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// observe reads usage from p, passed through as it is.
func (m *usageMeter) observe(p []byte) {
	if !m.sse {
		if len(m.carry)+len(p) <= maxMeteredBytes {
			m.carry = append(m.carry, p...)
		}
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			m.hold(p)
			return
		}
		line := p[:i]
		if len(m.carry) > 0 {
			line = append(m.carry, line...)
			m.carry = line // keep the grown buffer
		}
		m.line(line)
		m.carry, p = m.carry[:0], p[i+1:]
	}
}

// hold keeps the start of a line that has not ended yet, up to maxMeteredBytes (a longer line
// is no usage line the meter reads).
func (m *usageMeter) hold(p []byte) {
	if len(m.carry)+len(p) <= maxMeteredBytes {
		m.carry = append(m.carry, p...)
	}
}

// line reads the usage of one complete SSE line and reports whether it is the usage-only chunk.
func (m *usageMeter) line(line []byte) (usageChunk bool) {
	data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
	if !ok || !bytes.Contains(data, []byte(`"usage"`)) {
		return false
	}
	data = bytes.TrimSpace(data)
	if u, ok := openai.ParseUsage(data); ok {
		m.usage, m.found = u, true
		return openai.IsUsageChunk(data)
	}
	return false
}

// filter passes p on event by event, dropping the usage-only chunk.
func (m *usageMeter) filter(p []byte) error {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			return m.partial(p)
		}
		if err := m.endLine(p[:i+1]); err != nil {
			return err
		}
		p = p[i+1:]
	}
	return nil
}

// partial takes the start of a line: held with its event, or written at once when the event
// has outgrown the bound.
func (m *usageMeter) partial(p []byte) error {
	if !m.spill && len(m.event)+len(m.carry)+len(p) > maxMeteredBytes {
		if err := m.writeHeld(); err != nil {
			return err
		}
		m.spill = true
	}
	if m.spill {
		m.mid = m.mid || len(bytes.TrimSpace(p)) > 0
		_, err := m.ResponseWriter.Write(p)
		return err
	}
	m.carry = append(m.carry, p...)
	return nil
}

// endLine takes the end of a line (with its '\n'): the line joins its event, which is written
// (or dropped, the usage chunk) at its blank line.
func (m *usageMeter) endLine(p []byte) error {
	if m.spill {
		blank := !m.mid && len(bytes.TrimSpace(p)) == 0
		_, err := m.ResponseWriter.Write(p)
		m.spill, m.mid = !blank, false
		return err
	}
	start := len(m.event)
	m.event = append(append(m.event, m.carry...), p...)
	m.carry = m.carry[:0]
	blank := len(bytes.TrimSpace(m.event[start:])) == 0
	if m.line(m.event[start : len(m.event)-1]) {
		m.drop = true
	}
	if !blank {
		return nil
	}
	if m.drop {
		m.event, m.drop = m.event[:0], false
		return nil
	}
	return m.writeHeld()
}

// writeHeld writes what is held of the current event.
func (m *usageMeter) writeHeld() error {
	held := append(m.event, m.carry...)
	m.event, m.carry, m.drop = m.event[:0], m.carry[:0], false
	if len(held) == 0 {
		return nil
	}
	_, err := m.ResponseWriter.Write(held)
	return err
}

// finish writes what is still held when the answer has ended (an event without its blank line)
// unless it is the usage chunk.
func (m *usageMeter) finish() {
	if !m.strip || !m.sse {
		return
	}
	if len(m.carry) > 0 && m.line(m.carry) {
		m.drop = true
	}
	if m.drop {
		m.event, m.carry = m.event[:0], m.carry[:0]
		return
	}
	_ = m.writeHeld()
}

// tokens returns the input plus output tokens reported, and whether any usage was.
func (m *usageMeter) tokens() (int64, bool) {
	if !m.sse && len(m.carry) > 0 {
		if u, ok := openai.ParseUsage(m.carry); ok {
			m.usage, m.found = u, true
		}
	}
	return int64(m.usage.PromptTokens + m.usage.CompletionTokens), m.found
}
