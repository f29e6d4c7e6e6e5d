package oracle

import (
	"encoding/json"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// requestBody is the OpenAI request body loadgen sends (loadgen's encodeRequest, field for field):
// the oracle converts the same bytes with modelsim's server code, so that every pod simulates
// exactly the request it would receive over HTTP.
type requestBody struct {
	Model         string         `json:"model"`
	Messages      []message      `json:"messages,omitempty"`
	Prompt        string         `json:"prompt,omitempty"`
	MaxTokens     int            `json:"max_tokens"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
	IgnoreEOS     bool           `json:"ignore_eos,omitempty"`
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// encodeRequest builds the JSON body loadgen sends for r, and whether it goes to the chat API.
func encodeRequest(r *workload.Request, stream, ignoreEOS bool) ([]byte, bool, error) {
	b := requestBody{Model: r.Model, MaxTokens: r.MaxTokens, Stream: stream, IgnoreEOS: ignoreEOS}
	if stream {
		b.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	chat := r.Endpoint != workload.Completions
	if !chat {
		b.Prompt = r.Text()
	} else {
		if r.System != "" {
			b.Messages = append(b.Messages, message{Role: "system", Content: r.System})
		}
		b.Messages = append(b.Messages, message{Role: "user", Content: r.Prompt})
	}
	body, err := json.Marshal(b)
	return body, chat, err
}
