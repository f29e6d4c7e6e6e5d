package frontdoor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// request is the part of an OpenAI request body the router reads. The prompt fields decode
// straight into text (see promptText), so the body is scanned twice (encoding/json validates,
// then decodes) and a prompt that is one plain string is never copied.
type request struct {
	Model    *string    `json:"model"`
	Prompt   promptText `json:"prompt"`
	Messages []struct {
		Content promptText `json:"content"`
	} `json:"messages"`
	Input promptText `json:"input"`
}

// parseRequest returns the model and the prompt text (completions' prompt, chat messages'
// contents concatenated, or embeddings' input) of an OpenAI request body. The text may alias
// body.
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
	var buf [8][]byte
	parts := append(buf[:0], req.Prompt)
	for _, m := range req.Messages {
		parts = append(parts, m.Content)
	}
	parts = append(parts, req.Input)
	return *req.Model, concat(parts), nil
}

// concat joins parts, returning the only non-empty one itself.
func concat(parts [][]byte) []byte {
	var only []byte
	n, nonEmpty := 0, 0
	for _, p := range parts {
		if len(p) > 0 {
			only, n, nonEmpty = p, n+len(p), nonEmpty+1
		}
	}
	if nonEmpty <= 1 {
		return only
	}
	out := make([]byte, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// promptText is the text of a prompt field: a JSON string, or an array of strings or of content
// parts ({"type":"text","text":...}), concatenated; other values give no text. It never fails:
// a prompt the router cannot read is the gateway's to refuse.
type promptText []byte

// UnmarshalJSON is called by encoding/json with data already validated and sliced from the
// body: a string without escapes is kept as that slice, with no copy.
func (t *promptText) UnmarshalJSON(data []byte) error {
	*t = appendText(nil, data)
	return nil
}

// appendText appends the text of a valid JSON value (a string, an array of strings, or an array
// of content parts) to dst.
func appendText(dst []byte, raw []byte) []byte {
	switch {
	case len(raw) == 0:
		return dst
	case raw[0] == '"':
		return appendString(dst, raw)
	case raw[0] != '[':
		return dst
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return dst
	}
	for _, p := range parts {
		switch {
		case len(p) > 0 && p[0] == '"':
			dst = appendString(dst, p)
		case len(p) > 0 && p[0] == '{':
			var part struct {
				Text json.RawMessage `json:"text"`
			}
			if json.Unmarshal(p, &part) == nil && len(part.Text) > 0 && part.Text[0] == '"' {
				dst = appendString(dst, part.Text)
			}
		}
	}
	return dst
}

// appendString appends the JSON string s (quotes included) to dst, decoded. A string without
// escapes is its bytes as sent (as the gateway reads it, so both tiers hash the same text); when
// dst is empty it is returned as a slice of s itself, capped so that appending to it copies.
func appendString(dst, s []byte) []byte {
	inner := s[1 : len(s)-1 : len(s)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		if len(dst) == 0 {
			return inner
		}
		return append(dst, inner...)
	}
	var str string
	if json.Unmarshal(s, &str) != nil {
		return dst
	}
	return append(dst, str...)
}
