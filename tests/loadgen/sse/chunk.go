package sse

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Done is the data of the event that ends an OpenAI stream.
var Done = []byte("[DONE]")

// Usage is the token accounting a server reports (with stream_options.include_usage, in the last
// chunk).
type Usage struct {
	// PromptTokens is the prompt length in tokens.
	PromptTokens int
	// CompletionTokens is the number of generated tokens.
	CompletionTokens int
	// CachedTokens is prompt_tokens_details.cached_tokens: prompt tokens served from the prefix cache.
	CachedTokens int
}

// Chunk is what one event carries.
type Chunk struct {
	// Done is set for the [DONE] terminator.
	Done bool
	// ContentBytes is the length of the generated text in this chunk as encoded in JSON (delta.content
	// for chat, text for completions, message.content for whole responses), summed over choices.
	ContentBytes int
	// Usage is set when the chunk reports usage.
	Usage *Usage
	// Err is set when the chunk is an error object.
	Err *APIError
}

// APIError is an error reported inside the stream.
type APIError struct {
	// Message is the server's message.
	Message string
	// Type is the error type, e.g. "server_error".
	Type string
}

func (e *APIError) Error() string { return fmt.Sprintf("sse: server error %s: %s", e.Type, e.Message) }

// wireChunk is the subset of an OpenAI chunk that is decoded. Generated text is measured, never
// copied, so a content chunk decodes without allocating strings.
type wireChunk struct {
	Object  objectKind `json:"object"`
	Message string     `json:"message"`
	Type    string     `json:"type"`
	Choices []struct {
		Text  textLen `json:"text"`
		Delta struct {
			Content textLen `json:"content"`
		} `json:"delta"`
		Message struct {
			Content textLen `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

// textLen is the length of a JSON string as encoded (escapes count as written), or 0 for null.
type textLen int

// UnmarshalJSON measures the string without copying it.
func (t *textLen) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*t = 0
	case len(b) >= 2 && b[0] == '"':
		*t = textLen(len(b) - 2)
	default:
		return fmt.Errorf("sse: text is not a string: %.20s", b)
	}
	return nil
}

// objectKind records whether the object field is "error" without keeping the string.
type objectKind bool

// UnmarshalJSON sets the kind without copying the string.
func (o *objectKind) UnmarshalJSON(b []byte) error {
	*o = string(b) == `"error"`
	return nil
}

// ParseChunk decodes one event's data: a completion chunk (or a whole non-streamed response), an
// error object ({"error":{...}} or vLLM's {"object":"error",...}), or [DONE].
func ParseChunk(data []byte) (Chunk, error) {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, Done) {
		return Chunk{Done: true}, nil
	}
	var w wireChunk
	if err := json.Unmarshal(data, &w); err != nil {
		return Chunk{}, fmt.Errorf("sse: chunk: %w", err)
	}
	return w.chunk(), nil
}

// chunk extracts what loadgen needs from a decoded chunk.
func (w *wireChunk) chunk() Chunk {
	var c Chunk
	for i := range w.Choices {
		ch := &w.Choices[i]
		c.ContentBytes += int(ch.Text + ch.Delta.Content + ch.Message.Content)
	}
	if u := w.Usage; u != nil {
		c.Usage = &Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
		if u.PromptTokensDetails != nil {
			c.Usage.CachedTokens = u.PromptTokensDetails.CachedTokens
		}
	}
	switch {
	case w.Error != nil:
		c.Err = &APIError{Message: w.Error.Message, Type: w.Error.Type}
	case bool(w.Object):
		c.Err = &APIError{Message: w.Message, Type: w.Type}
	}
	return c
}
