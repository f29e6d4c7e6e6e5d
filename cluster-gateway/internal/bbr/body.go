package bbr

import (
	"errors"
	"fmt"
	"strconv"
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
	// for embeddings. Its backing array is reused by the next Parse.
	Prompt []byte
	// PromptTokenIDs counts prompt tokens given directly as token ids (arrays of integers).
	PromptTokenIDs int
}

// ErrMissingModel is returned by Parse when the body has no non-empty "model" string.
var ErrMissingModel = errors.New("bbr: model is required")

// Reset clears b, keeping the prompt buffer's capacity.
func (b *Body) Reset() {
	*b = Body{Prompt: b.Prompt[:0]}
}

// EstimatedPromptTokens estimates the prompt length in tokens (about four characters a token).
func (b *Body) EstimatedPromptTokens() int {
	return (len(b.Prompt)+3)/4 + b.PromptTokenIDs
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
		v, err := s.str(nil, true)
		b.Model = string(v)
		return err
	case "stream":
		return s.boolean(&b.Stream)
	case "stream_options":
		return b.streamOptions(s)
	case "max_tokens", "max_completion_tokens":
		return s.count(&b.MaxTokens)
	case "prompt", "input":
		b.Prompt, b.PromptTokenIDs = b.Prompt[:0], 0
		return b.promptValue(s, 0)
	case "messages":
		b.Prompt, b.PromptTokenIDs = b.Prompt[:0], 0
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
		var err error
		b.Prompt, err = s.str(b.Prompt, false)
		return err
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
			var err error
			b.Prompt, err = s.str(b.Prompt, false)
			return err
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
			var err error
			b.Prompt, err = s.str(b.Prompt, false)
			return err
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
