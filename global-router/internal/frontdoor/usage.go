package frontdoor

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/openai"
	"github.com/switchyard-dev/switchyard/contract/ratelimit"
	"github.com/switchyard-dev/switchyard/contract/usagemeter"
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
	lease *ratelimit.Lease,
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
// reports: the last SSE data event with a usage object, or a JSON body's usage. With strip set
// (the router asked the stream for a usage chunk its client did not ask for), it holds each SSE
// event back until the blank line that ends it and drops the usage-only chunk
// (openai.IsUsageChunk), so the client receives the events it asked for.
//
// What it buffers (a JSON body or an SSE line spanning writes: usagemeter.Buffer; a held event)
// is reserved from the in-flight body budget as it grows, at most usagemeter.MaxBuffered, and
// given back by tokens. A body or line that does not fit is passed on unmetered (skipped whole,
// never spliced) and an event that does not fit is written through as it comes: its usage is not
// read.
type usageMeter struct {
	http.ResponseWriter
	strip bool
	sse   bool
	head  bool
	// buf holds the current line (SSE) or the body (JSON) when not stripping.
	buf usagemeter.Buffer
	// held holds the current event's bytes, its current line from lineAt on, when stripping.
	held   body.Buffer
	lineAt int
	// spilled is why an event held back did not fit ("" when none did).
	spilled string
	spill   bool // strip: the current event outgrew the buffer and is written through
	mid     bool // spill: the current line has more than white space so far
	drop    bool // strip: the current event is the usage chunk
	usage   openai.Usage
	found   bool
	budget  *body.Budget
}

// newUsageMeter returns a meter of the answer written to w, buffering from budget (nil: none),
// stripping the usage-only chunk when strip is set.
func newUsageMeter(w http.ResponseWriter, budget *body.Budget, strip bool) *usageMeter {
	m := &usageMeter{ResponseWriter: w, strip: strip, budget: budget}
	m.held.Reset(body.Options{Limit: usagemeter.MaxBuffered, Budget: budget})
	return m
}

func (m *usageMeter) Unwrap() http.ResponseWriter { return m.ResponseWriter }

func (m *usageMeter) Write(p []byte) (int, error) {
	if !m.head {
		m.head = true
		m.sse = strings.HasPrefix(m.Header().Get("Content-Type"), "text/event-stream")
		m.buf.Reset(m.sse, m.budget)
	}
	if !m.sse || !m.strip {
		m.buf.Write(p, func(line []byte) { m.line(line) })
		return m.ResponseWriter.Write(p)
	}
	if err := m.filter(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// unmetered is why something of the answer was not read, "" when all of it was.
func (m *usageMeter) unmetered() string {
	if r := m.buf.Unmetered(); r != "" {
		return r
	}
	return m.spilled
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
// does not fit.
func (m *usageMeter) partial(p []byte) error {
	if !m.spill {
		err := m.held.Append(p)
		if err == nil {
			return nil
		}
		if err := m.spillHeld(err); err != nil {
			return err
		}
	}
	m.mid = m.mid || len(bytes.TrimSpace(p)) > 0
	_, err := m.ResponseWriter.Write(p)
	return err
}

// spillHeld writes what is held of the current event and passes the rest of it through: it did
// not fit in the buffer (err).
func (m *usageMeter) spillHeld(err error) error {
	if m.spilled == "" {
		m.spilled = usagemeter.Reason(err)
	}
	m.spill = true
	m.mid = len(bytes.TrimSpace(m.held.Bytes()[m.lineAt:])) > 0
	err = m.writeHeld()
	m.held.Release() // the buffer is given back while the event passes through
	return err
}

// endLine takes the end of a line (with its '\n'): the line joins its event, which is written
// (or dropped, the usage chunk) at its blank line.
func (m *usageMeter) endLine(p []byte) error {
	if !m.spill {
		err := m.held.Append(p)
		if err == nil {
			return m.heldLine()
		}
		if err := m.spillHeld(err); err != nil {
			return err
		}
	}
	blank := !m.mid && len(bytes.TrimSpace(p)) == 0
	_, err := m.ResponseWriter.Write(p)
	m.spill, m.mid = !blank, false
	return err
}

// heldLine reads the line just completed in the held event, and at the event's blank line writes
// the event, or drops it when it is the usage chunk.
func (m *usageMeter) heldLine() error {
	held := m.held.Bytes()
	line := held[m.lineAt : len(held)-1]
	m.lineAt = len(held)
	if len(bytes.TrimSpace(line)) > 0 {
		if m.line(line) {
			m.drop = true
		}
		return nil
	}
	if m.drop {
		m.held.Clear()
		m.lineAt, m.drop = 0, false
		return nil
	}
	return m.writeHeld()
}

// writeHeld writes what is held of the current event.
func (m *usageMeter) writeHeld() error {
	held := m.held.Bytes()
	var err error
	if len(held) > 0 {
		_, err = m.ResponseWriter.Write(held)
	}
	m.held.Clear()
	m.lineAt, m.drop = 0, false
	return err
}

// finish writes what is still held when the answer has ended (an event without its blank line)
// unless it is the usage chunk.
func (m *usageMeter) finish() {
	if !m.strip || !m.sse {
		return
	}
	if m.held.Len() > m.lineAt && m.line(m.held.Bytes()[m.lineAt:]) {
		m.drop = true
	}
	if m.drop {
		m.held.Clear()
		m.lineAt, m.drop = 0, false
		return
	}
	_ = m.writeHeld()
}

// tokens returns the input plus output tokens reported, and whether any usage was; it gives
// back the buffer, so it is called once, when the answer has been forwarded (after finish).
func (m *usageMeter) tokens() (int64, bool) {
	if u, ok := m.buf.Usage(); ok {
		m.usage, m.found = u, true
	}
	m.buf.Release()
	m.held.Release()
	return int64(m.usage.PromptTokens) + int64(m.usage.CompletionTokens), m.found
}
