package server

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/switchyard-dev/switchyard/tests/modelsim/textgen"
)

// genRequest is a parsed completion, chat completion or responses request.
type genRequest struct {
	chat         bool
	responses    bool // a Responses API request (chat is also set: its input renders as messages)
	model        string
	prompt       string // the prompt text (chat: messages rendered with the template)
	promptTokens int
	tokenIDs     []int64 // the prompt's token ids when the request gave them
	maxTokens    int     // 0 when the request set none
	stream       bool
	includeUsage bool
	ignoreEOS    bool
	instructions *string // responses: the instructions, echoed in the response object
	// remoteDecode: kv_transfer_params.do_remote_decode, a decode pod's prefill request.
	remoteDecode bool
	// raw is the request body as received.
	raw []byte
}

type wireRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []wireMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IgnoreEOS   bool     `json:"ignore_eos"`
	N           *int     `json:"n"`
	Temperature *float64 `json:"temperature"` // accepted, ignored
	// KVTransferParams is vLLM's KV connector hand-off (NIXL): a decode pod asks a prefill pod
	// for a prompt's KV cache with do_remote_decode.
	KVTransferParams *struct {
		DoRemoteDecode bool `json:"do_remote_decode"`
	} `json:"kv_transfer_params"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// parseRequest decodes an OpenAI completion (chat=false) or chat completion body. Errors are
// *apiError values with status 400.
func parseRequest(body []byte, chat bool) (*genRequest, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, badRequest("", "Invalid JSON body: %v", err)
	}
	if w.Model == "" {
		return nil, badRequest("model", "Field 'model' is required.")
	}
	r := &genRequest{chat: chat, model: w.Model, stream: w.Stream, ignoreEOS: w.IgnoreEOS, raw: body}
	r.remoteDecode = w.KVTransferParams != nil && w.KVTransferParams.DoRemoteDecode
	r.includeUsage = w.StreamOptions != nil && w.StreamOptions.IncludeUsage
	if err := r.setMaxTokens(w); err != nil {
		return nil, err
	}
	if w.N != nil && *w.N != 1 {
		return nil, badRequest("n", "Only n=1 is supported, got %d.", *w.N)
	}
	var err error
	if chat {
		r.prompt, err = renderMessages(w.Messages)
	} else {
		r.prompt, r.tokenIDs, err = promptText(w.Prompt)
		r.promptTokens = len(r.tokenIDs)
	}
	if err != nil {
		return nil, err
	}
	if r.promptTokens == 0 {
		r.promptTokens = textgen.CountTokens(r.prompt)
	}
	if r.promptTokens == 0 {
		return nil, badRequest("prompt", "The prompt is empty.")
	}
	return r, nil
}

func (r *genRequest) setMaxTokens(w wireRequest) error {
	mt := w.MaxTokens
	if r.chat && w.MaxCompletionTokens != nil {
		mt = w.MaxCompletionTokens
	}
	if mt == nil {
		return nil
	}
	if *mt < 1 {
		return badRequest("max_tokens", "max_tokens must be at least 1, got %d.", *mt)
	}
	r.maxTokens = *mt
	return nil
}

// promptText accepts a string, a list of one string, or a list of token ids (returned, their
// count the prompt length; their decimal text stands in for the prompt text).
func promptText(raw json.RawMessage) (string, []int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil, badRequest("prompt", "Field 'prompt' is required.")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		if len(list) != 1 {
			return "", nil, badRequest("prompt", "Exactly one prompt is supported, got %d.", len(list))
		}
		return list[0], nil, nil
	}
	var ids []int64
	if err := json.Unmarshal(raw, &ids); err != nil || len(ids) == 0 {
		return "", nil, badRequest("prompt",
			"Field 'prompt' must be a string, a list of one string or a list of token ids.")
	}
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(strconv.FormatInt(id, 10))
		b.WriteByte(' ')
	}
	return b.String(), ids, nil
}

// renderMessages renders chat messages (content as a string or a list of text parts).
func renderMessages(in []wireMessage) (string, error) {
	if len(in) == 0 {
		return "", badRequest("messages", "Field 'messages' must hold at least one message.")
	}
	msgs := make([]textgen.Message, len(in))
	for i, m := range in {
		if m.Role == "" {
			return "", badRequest("messages", "Message %d has no role.", i)
		}
		text, err := messageContent(m.Content)
		if err != nil {
			return "", badRequest("messages", "Message %d: %v", i, err)
		}
		msgs[i] = textgen.Message{Role: m.Role, Content: text}
	}
	return textgen.RenderChat(msgs), nil
}

func messageContent(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errContent
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

var errContent = badRequest("messages", "content must be a string or a list of content parts")
