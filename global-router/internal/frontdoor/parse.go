package frontdoor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// readBody reads the whole body, refusing more than limit bytes with 413.
func readBody(r *http.Request, limit int64) ([]byte, *apiError) {
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + 1)
	}
	n, err := buf.ReadFrom(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, badRequest("reading request body: "+err.Error(), "")
	}
	if n > limit {
		return nil, tooLarge(limit)
	}
	return buf.Bytes(), nil
}

// request is the part of an OpenAI request body the router reads.
type request struct {
	Model    *string         `json:"model"`
	Prompt   json.RawMessage `json:"prompt"`
	Messages []struct {
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Input json.RawMessage `json:"input"`
}

// parseRequest returns the model and the prompt text (completions' prompt, chat messages'
// contents concatenated, or embeddings' input) of an OpenAI request body.
func parseRequest(body []byte) (string, []byte, *apiError) {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
			return "", nil, badRequest(fmt.Sprintf("malformed JSON body: %v", err), "")
		}
		return "", nil, badRequest(fmt.Sprintf("invalid request body: %v", err), "")
	}
	if req.Model == nil || *req.Model == "" {
		return "", nil, badRequest("you must provide a model parameter", "model")
	}
	var text []byte
	text = appendText(text, req.Prompt)
	for _, m := range req.Messages {
		text = appendText(text, m.Content)
	}
	text = appendText(text, req.Input)
	return *req.Model, text, nil
}

// appendText appends the text of a JSON string, array of strings, or array of content parts.
func appendText(dst []byte, raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return dst
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return append(dst, s...)
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) == nil {
		for _, p := range parts {
			var part struct {
				Text string `json:"text"`
			}
			if json.Unmarshal(p, &s) == nil {
				dst = append(dst, s...)
			} else if json.Unmarshal(p, &part) == nil {
				dst = append(dst, part.Text...)
			}
		}
	}
	return dst
}
