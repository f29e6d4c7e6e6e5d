package bbr

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// Body is what body-based routing reads from an OpenAI request body (completions, chat
// completions or embeddings). A Body may be reused across requests: Parse resets it first.
type Body struct {
	// Model is the "model" field.
	Model string
	// Stream is the "stream" field.
	Stream bool
	// IncludeUsage is stream_options.include_usage.
	IncludeUsage bool
	// MaxTokens is "max_tokens" (or "max_completion_tokens"), 0 when absent or null.
	MaxTokens int
	// Prompt is the prompt text as sent, JSON-decoded: "prompt" (strings concatenated) for
	// completions, the concatenated message contents (strings or text parts) for chat, "input"
	// for embeddings; only its first MaxPrompt bytes when MaxPrompt is positive. A prompt that
	// is one string without escapes aliases the parsed data (no copy); otherwise the text is
	// decoded into a buffer that the next Parse reuses.
	Prompt []byte
	// PromptBytes is the length of the whole decoded prompt text, including any part past
	// MaxPrompt.
	PromptBytes int
	// PromptTokenIDs counts prompt tokens given directly as token ids (arrays of integers).
	PromptTokenIDs int
	// MaxPrompt bounds the text kept in Prompt (0 keeps all of it), so that a huge prompt is not
	// copied when only its first blocks are hashed. Reset and Parse keep it.
	MaxPrompt int

	buf   []byte // storage for Prompt when it does not alias the data
	owned bool   // Prompt is in buf
}

// ErrMissingModel is returned by Parse when the body has no non-empty "model" string.
var ErrMissingModel = errors.New("bbr: model is required")

// Reset clears b, keeping MaxPrompt and the prompt buffer's capacity.
func (b *Body) Reset() {
	*b = Body{MaxPrompt: b.MaxPrompt, buf: b.buf[:0]}
}

// EstimatedPromptTokens estimates the prompt length in tokens (about four characters a token).
func (b *Body) EstimatedPromptTokens() int {
	return (b.PromptBytes+3)/4 + b.PromptTokenIDs
}

// resetPrompt forgets the prompt read so far (a repeated "prompt" or "messages" member wins).
func (b *Body) resetPrompt() {
	b.Prompt, b.PromptBytes, b.PromptTokenIDs, b.buf, b.owned = nil, 0, 0, b.buf[:0], false
}

// text adds the string at the cursor to the prompt. The first string aliases the data when it
// has no escapes; later strings are decoded into buf, up to MaxPrompt bytes.
func (b *Body) text(s *scanner) error {
	limit := b.MaxPrompt
	if limit <= 0 {
		limit = math.MaxInt
	}
	if b.PromptBytes == 0 && !b.owned {
		if v, ok := s.plainStr(); ok {
			b.Prompt, b.PromptBytes = v[:min(len(v), limit)], len(v)
			return nil
		}
	}
	if !b.owned {
		b.buf, b.owned = append(b.buf[:0], b.Prompt...), true
	}
	var n int
	var err error
	b.buf, n, err = s.text(b.buf, limit)
	b.Prompt = b.buf
	b.PromptBytes += n
	return err
}

// Parse reads the fields of Body from data in one pass, validating that data is one JSON object.
// A syntax error is wrapped with the offset; a missing model yields ErrMissingModel.
func Parse(data []byte, b *Body) error {
	b.Reset()
	s := scanner{data: data}
	if s.ws() != '{' {
		return fmt.Errorf("bbr: request body must be a JSON object")
	}
	if err := s.object(func(key []byte) error { return b.member(&s, key) }); err != nil {
		return fmt.Errorf("bbr: malformed JSON: %w", err)
	}
	if err := s.end(); err != nil {
		return fmt.Errorf("bbr: malformed JSON: %w", err)
	}
	if b.Model == "" {
		return ErrMissingModel
	}
	return nil
}

// member reads one top-level member.
func (b *Body) member(s *scanner, key []byte) error {
	switch string(key) {
	case "model":
		if s.ws() != '"' {
			return s.errorf("model must be a string")
		}
		v, err := s.str(nil)
		b.Model = jsonString(v)
		return err
	case "stream":
		return s.boolean(&b.Stream)
	case "stream_options":
		return b.streamOptions(s)
	case "max_tokens", "max_completion_tokens":
		return s.count(&b.MaxTokens)
	case "prompt", "input":
		b.resetPrompt()
		return b.promptValue(s, 0)
	case "messages":
		b.resetPrompt()
		return s.arrayOrNull(func() error { return b.message(s) })
	}
	return s.skip(1)
}

func (b *Body) streamOptions(s *scanner) error {
	if s.ws() == 'n' {
		return s.literal("null")
	}
	return s.object(func(key []byte) error {
		if string(key) == "include_usage" {
			return s.boolean(&b.IncludeUsage)
		}
		return s.skip(2)
	})
}

// promptValue reads a prompt: a string, an array of strings, an array of token ids, or an array
// of arrays of token ids.
func (b *Body) promptValue(s *scanner, depth int) error {
	switch c := s.ws(); {
	case c == '"':
		return b.text(s)
	case c == '[' && depth < 2:
		return s.array(func() error { return b.promptValue(s, depth+1) })
	case c == '-' || (c >= '0' && c <= '9'):
		if _, err := s.number(); err != nil {
			return err
		}
		b.PromptTokenIDs++
		return nil
	}
	return s.skip(depth + 1)
}

// message reads one chat message, appending its content to the prompt.
func (b *Body) message(s *scanner) error {
	if s.ws() != '{' {
		return s.skip(2)
	}
	return s.object(func(key []byte) error {
		if string(key) != "content" {
			return s.skip(3)
		}
		switch s.ws() {
		case '"':
			return b.text(s)
		case '[':
			return s.array(func() error { return b.contentPart(s) })
		}
		return s.skip(3)
	})
}

// contentPart reads one content part, appending its "text" when present.
func (b *Body) contentPart(s *scanner) error {
	if s.ws() != '{' {
		return s.skip(4)
	}
	return s.object(func(key []byte) error {
		if string(key) == "text" && s.ws() == '"' {
			return b.text(s)
		}
		return s.skip(5)
	})
}

// boolean reads true, false or null (false).
func (s *scanner) boolean(dst *bool) error {
	switch s.ws() {
	case 't':
		*dst = true
		return s.literal("true")
	case 'f':
		*dst = false
		return s.literal("false")
	case 'n':
		*dst = false
		return s.literal("null")
	}
	return s.errorf("expected a boolean")
}

// count reads a non-negative integer or null (0).
func (s *scanner) count(dst *int) error {
	if s.ws() == 'n' {
		*dst = 0
		return s.literal("null")
	}
	num, err := s.number()
	if err != nil {
		return err
	}
	v, err := strconv.ParseUint(string(num), 10, 31)
	if err != nil {
		return s.errorf("expected a non-negative integer, found %s", num)
	}
	*dst = int(v)
	return nil
}

// arrayOrNull reads an array (elem per element) or null.
func (s *scanner) arrayOrNull(elem func() error) error {
	if s.ws() == 'n' {
		return s.literal("null")
	}
	return s.array(elem)
}

// jsonString returns v as encoding/json decodes a string: each byte that is not part of valid
// UTF-8 becomes U+FFFD, so the model name matches what a JSON decoder downstream sees.
func jsonString(v []byte) string {
	if utf8.Valid(v) {
		return string(v)
	}
	out := make([]byte, 0, len(v)+8)
	for len(v) > 0 {
		r, n := utf8.DecodeRune(v)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, v[:n]...)
		}
		v = v[n:]
	}
	return string(out)
}
