package server

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
)

// stream answers with server-sent events: one chunk per token (the first carries the first token,
// with no empty priming event; a chat stream's first chunk also carries the assistant role), the
// last token's chunk carries finish_reason, then a usage chunk when stream_options.include_usage
// is set, then "data: [DONE]".
func (s *Server) stream(w http.ResponseWriter, r *http.Request, o *output) {
	s.streamEvents(w, r, o, nil, o.appendTokenEvents, func(buf []byte, p engine.Progress) []byte {
		if o.req.includeUsage {
			buf = o.appendUsageEvent(buf, p)
		}
		return append(buf, "data: [DONE]\n\n"...)
	})
}

// streamEvents answers with server-sent events: head's (when not nil) at once, with the response
// headers; tokens' for each batch of tokens generated since token from, as they come; tail's once
// the request is done. Each appends to the buffer it is given.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, o *output, head func([]byte) []byte,
	tokens func(buf []byte, from int, p engine.Progress) []byte, tail func([]byte, engine.Progress) []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, 1024)
	if head != nil {
		buf = head(buf)
		if _, err := w.Write(buf); err != nil {
			s.engine.Cancel(o.h)
			return
		}
	}
	_ = rc.Flush()
	sent := 0
	for {
		p := o.h.Progress()
		if p.Generated > sent {
			buf = tokens(buf[:0], sent, p)
			sent = p.Generated
			if !s.flush(w, rc, buf, o.h) {
				return
			}
		}
		if p.Done {
			break
		}
		select {
		case <-o.h.Notify():
		case <-r.Context().Done():
			s.engine.Cancel(o.h)
			return
		}
	}
	s.flush(w, rc, tail(buf[:0], o.h.Progress()), o.h)
}

// appendTokenEvents appends one event per token generated since token from; the last token of a
// finished request carries the finish reason.
func (o *output) appendTokenEvents(buf []byte, from int, p engine.Progress) []byte {
	for i := from; i < p.Generated; i++ {
		final := ""
		if p.Done && i == p.Generated-1 {
			final = p.FinishReason
		}
		buf = o.appendTokenEvent(buf, i, final)
	}
	return buf
}

// flush writes buf and flushes it to the client; on failure the request is cancelled.
func (s *Server) flush(w http.ResponseWriter, rc *http.ResponseController, buf []byte, h *engine.Handle) bool {
	if _, err := w.Write(buf); err != nil {
		s.engine.Cancel(h)
		return false
	}
	if err := rc.Flush(); err != nil {
		s.engine.Cancel(h)
		return false
	}
	return true
}

// appendTokenEvent appends the SSE event of token i; final is its finish reason when it is the last.
func (o *output) appendTokenEvent(buf []byte, i int, final string) []byte {
	buf = append(buf, "data: "...)
	buf = append(buf, o.head...)
	if o.req.chat {
		buf = append(buf, `,"choices":[{"index":0,"delta":{`...)
		if i == 0 {
			buf = append(buf, `"role":"assistant",`...)
		}
		buf = append(buf, `"content":"`...)
		buf = append(buf, o.gen.Token(i)...)
		buf = append(buf, `"},"logprobs":null,"finish_reason":`...)
	} else {
		buf = append(buf, `,"choices":[{"index":0,"text":"`...)
		buf = append(buf, o.gen.Token(i)...)
		buf = append(buf, `","logprobs":null,"finish_reason":`...)
	}
	if final == "" {
		buf = append(buf, "null"...)
	} else {
		buf = strconv.AppendQuote(buf, final)
	}
	return append(buf, `,"stop_reason":null}]}`+"\n\n"...)
}

func (o *output) appendUsageEvent(buf []byte, p engine.Progress) []byte {
	u, _ := json.Marshal(o.usage(p))
	buf = append(buf, "data: "...)
	buf = append(buf, o.head...)
	buf = append(buf, `,"choices":[],"usage":`...)
	buf = append(buf, u...)
	return append(buf, "}\n\n"...)
}

type completionResponse struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   usage    `json:"usage"`
}

type choice struct {
	Index        int          `json:"index"`
	Text         *string      `json:"text,omitempty"`
	Message      *chatMessage `json:"message,omitempty"`
	Logprobs     any          `json:"logprobs"`
	FinishReason string       `json:"finish_reason"`
	StopReason   any          `json:"stop_reason"`
}

type chatMessage struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	ToolCalls []any  `json:"tool_calls"`
}

// respond waits for the whole answer and writes it as one JSON object.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, o *output) {
	p, ok := s.wait(r, o.h)
	if !ok {
		return
	}
	text := string(o.gen.AppendText(nil, 0, p.Generated))
	resp := completionResponse{ID: o.id, Object: "text_completion", Created: o.created, Model: o.req.model,
		Usage: o.usage(p)}
	c := choice{FinishReason: p.FinishReason}
	if o.req.chat {
		resp.Object = "chat.completion"
		c.Message = &chatMessage{Role: "assistant", Content: text, ToolCalls: []any{}}
	} else {
		c.Text = &text
	}
	resp.Choices = []choice{c}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}
