package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/textgen"
)

// handleResponses serves the OpenAI Responses API, POST /v1/responses, as vLLM does: the
// instructions and the input's messages render as a chat; the answer is a response object, or
// with "stream" typed server-sent events (response.created, response.in_progress, the output
// item and content part, one response.output_text.delta per token, their done events, then
// response.completed carrying the response and its usage; no [DONE]). modelsim stores no responses, so
// previous_response_id is refused.
func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	req, ereq, apiErr := s.prepare(w, r, parseResponsesRequest)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	s.generate(w, r, req, ereq)
}

type wireResponsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Stream             bool            `json:"stream"`
	PreviousResponseID *string         `json:"previous_response_id"`
	IgnoreEOS          bool            `json:"ignore_eos"`
	Temperature        *float64        `json:"temperature"` // accepted, ignored
}

// inputItem is one item of a Responses API input array; modelsim reads messages only.
type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// parseResponsesRequest decodes a Responses API body. Errors are *apiError values with status 400.
func parseResponsesRequest(body []byte) (*genRequest, error) {
	var w wireResponsesRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, badRequest("", "Invalid JSON body: %v", err)
	}
	if w.Model == "" {
		return nil, badRequest("model", "Field 'model' is required.")
	}
	if w.PreviousResponseID != nil && *w.PreviousResponseID != "" {
		return nil, badRequest(
			"previous_response_id",
			"modelsim stores no responses, so previous_response_id is not supported.",
		)
	}
	r := &genRequest{
		chat:         true,
		responses:    true,
		model:        w.Model,
		stream:       w.Stream,
		ignoreEOS:    w.IgnoreEOS,
		instructions: w.Instructions,
	}
	if mt := w.MaxOutputTokens; mt != nil {
		if *mt < 1 {
			return nil, badRequest("max_output_tokens", "max_output_tokens must be at least 1, got %d.", *mt)
		}
		r.maxTokens = *mt
	}
	msgs, err := inputMessages(w.Input)
	if err != nil {
		return nil, err
	}
	if w.Instructions != nil && *w.Instructions != "" {
		msgs = append([]textgen.Message{{Role: "system", Content: *w.Instructions}}, msgs...)
	}
	r.prompt = textgen.RenderChat(msgs)
	r.promptTokens = textgen.CountTokens(r.prompt)
	return r, nil
}

// inputMessages reads "input": a string (one user message) or an array of message items.
func inputMessages(raw json.RawMessage) ([]textgen.Message, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, badRequest("input", "Field 'input' is required.")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []textgen.Message{{Role: "user", Content: text}}, nil
	}
	var items []inputItem
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		return nil, badRequest("input", "Field 'input' must be a string or a non-empty list of input items.")
	}
	msgs := make([]textgen.Message, len(items))
	for i, it := range items {
		if it.Type != "" && it.Type != "message" {
			return nil, badRequest("input", "Input item %d has type %q; modelsim supports messages only.", i, it.Type)
		}
		if it.Role == "" {
			return nil, badRequest("input", "Input item %d has no role.", i)
		}
		text, err := inputContent(it.Content)
		if err != nil {
			return nil, badRequest("input", "Input item %d: %v", i, err)
		}
		msgs[i] = textgen.Message{Role: it.Role, Content: text}
	}
	return msgs, nil
}

// inputContent is a message's content: a string, or the text of its input_text and output_text
// parts.
func inputContent(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errInputContent
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "input_text" || p.Type == "output_text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

var errInputContent = badRequest("input", "content must be a string or a list of content parts")

// responseObject is the Responses API's response, in vLLM's shape.
type responseObject struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Model              string             `json:"model"`
	Output             []outputMessage    `json:"output"`
	Usage              *responseUsage     `json:"usage"`
	IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
	Error              any                `json:"error"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	PreviousResponseID any                `json:"previous_response_id"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	ToolChoice         string             `json:"tool_choice"`
	Tools              []any              `json:"tools"`
	Truncation         string             `json:"truncation"`
	Store              bool               `json:"store"`
	Metadata           map[string]string  `json:"metadata"`
	Text               responseText       `json:"text"`
}

type responseText struct {
	Format struct {
		Type string `json:"type"`
	} `json:"format"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

type outputMessage struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

// responseUsage is the Responses API's usage; input_tokens_details is null when the server does
// not report cached tokens (Config.ReportCachedTokens off), as prompt_tokens_details is.
type responseUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  *promptDetails `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// messageID is the id of the response's one output message.
func (o *output) messageID() string { return "msg_" + strings.TrimPrefix(o.id, "resp_") }

// response is o's response object: in progress (no output, no usage) until the request is done.
func (o *output) response(p engine.Progress) responseObject {
	resp := responseObject{ID: o.id, Object: "response", CreatedAt: o.created, Status: "in_progress", Model: o.req.model,
		Output: []outputMessage{}, Instructions: o.req.instructions, ToolChoice: "auto", Tools: []any{},
		Truncation: "disabled", Metadata: map[string]string{}}
	if o.req.maxTokens > 0 {
		resp.MaxOutputTokens = &o.req.maxTokens
	}
	resp.Text.Format.Type = "text"
	if !p.Done {
		return resp
	}
	resp.Status = "completed"
	if p.FinishReason == "length" {
		resp.Status, resp.IncompleteDetails = "incomplete", &incompleteDetails{Reason: "max_output_tokens"}
	}
	resp.Output = []outputMessage{o.message("completed", string(o.gen.AppendText(nil, 0, p.Generated)))}
	resp.Usage = &responseUsage{InputTokens: o.req.promptTokens, InputTokensDetails: details(o.reportCached, p),
		OutputTokens: p.Generated, TotalTokens: o.req.promptTokens + p.Generated}
	return resp
}

// message is the output message with the given status: in progress it has no content yet;
// completed, its one output_text part holds text.
func (o *output) message(status, text string) outputMessage {
	m := outputMessage{ID: o.messageID(), Type: "message", Status: status, Role: "assistant", Content: []outputText{}}
	if status == "completed" {
		m.Content = []outputText{textPart(text)}
	}
	return m
}

func textPart(text string) outputText {
	return outputText{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}
}

// respondResponse waits for the whole answer and writes the response object.
func (s *Server) respondResponse(w http.ResponseWriter, r *http.Request, o *output) {
	p, ok := s.wait(r, o.h)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(o.response(p))
}

// streamResponse answers with the Responses API's typed events: the lifecycle events at once
// (before the first token, as an engine sends them), a delta per token, then the done events
// and response.completed with the usage (also when the answer stopped at max_output_tokens: its
// response's status is then incomplete).
func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, o *output) {
	e := &eventWriter{o: o}
	s.streamEvents(w, r, o, e.head, e.deltas, e.tail)
}

// eventWriter renders one request's Responses API events, numbering them.
type eventWriter struct {
	o   *output
	seq int
}

// event appends one event of the given type: fields is the JSON object of its other members.
func (e *eventWriter) event(buf []byte, typ string, fields map[string]any) []byte {
	fields["type"], fields["sequence_number"] = typ, e.seq
	e.seq++
	data, _ := json.Marshal(fields)
	buf = append(buf, "event: "+typ+"\ndata: "...)
	buf = append(buf, data...)
	return append(buf, "\n\n"...)
}

func (e *eventWriter) head(buf []byte) []byte {
	resp := e.o.response(engine.Progress{})
	buf = e.event(buf, "response.created", map[string]any{"response": resp})
	buf = e.event(buf, "response.in_progress", map[string]any{"response": resp})
	buf = e.event(
		buf,
		"response.output_item.added",
		map[string]any{"output_index": 0, "item": e.o.message("in_progress", "")},
	)
	return e.event(buf, "response.content_part.added", map[string]any{"item_id": e.o.messageID(), "output_index": 0,
		"content_index": 0, "part": textPart("")})
}

// deltas appends a response.output_text.delta per token generated since token from (written
// by hand: these are the hot events).
func (e *eventWriter) deltas(buf []byte, from int, p engine.Progress) []byte {
	id := e.o.messageID()
	for i := from; i < p.Generated; i++ {
		buf = append(
			buf,
			`event: response.output_text.delta`+"\n"+`data: {"type":"response.output_text.delta","sequence_number":`...)
		buf = strconv.AppendInt(buf, int64(e.seq), 10)
		e.seq++
		buf = append(buf, `,"item_id":"`...)
		buf = append(buf, id...)
		buf = append(buf, `","output_index":0,"content_index":0,"delta":"`...)
		buf = append(buf, e.o.gen.Token(i)...) // plain ASCII, no escaping needed
		buf = append(buf, `","logprobs":[]}`+"\n\n"...)
	}
	return buf
}

func (e *eventWriter) tail(buf []byte, p engine.Progress) []byte {
	resp := e.o.response(p)
	text := string(e.o.gen.AppendText(nil, 0, p.Generated))
	id := e.o.messageID()
	buf = e.event(buf, "response.output_text.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0,
		"text": text, "logprobs": []any{}})
	buf = e.event(buf, "response.content_part.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0,
		"part": textPart(text)})
	buf = e.event(
		buf,
		"response.output_item.done",
		map[string]any{"output_index": 0, "item": e.o.message("completed", text)},
	)
	// As vLLM: response.completed whatever the status (incomplete at max_output_tokens).
	return e.event(buf, "response.completed", map[string]any{"response": resp})
}
