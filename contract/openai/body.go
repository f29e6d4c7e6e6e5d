// Package openai reads the fields that routing needs from an OpenAI request body (completions,
// chat completions, embeddings, responses) in one validating pass, without copying the body. Both tiers read
// a request with Parse, so the router and the gateway can never see different models, streaming
// flags or priorities in the same bytes: a body that names model, stream or priority twice, or
// also under a key that differs only in case (which encoding/json would take), is refused.
// Both tiers answer a refused request with Error, the one OpenAI-style error body and writer.
package openai

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/switchyard-dev/switchyard/contract"
)

// Body is what body-based routing reads from an OpenAI request body (completions, chat
// completions, embeddings or responses). A Body may be reused across requests: Parse resets it
// first.
type Body struct {
	// Model is the "model" field.
	Model string
	// Stream is the "stream" field.
	Stream bool
	// IncludeUsage is stream_options.include_usage.
	IncludeUsage bool
	// MaxTokens is "max_tokens" (or "max_completion_tokens", or the Responses API's
	// "max_output_tokens"; the last of them wins), 0 when absent or null.
	MaxTokens int
	// Prompt is the prompt text as sent, JSON-decoded: "prompt" (strings concatenated) for
	// completions, the concatenated message contents (strings or text parts) for chat, "input"
	// for embeddings, and for responses "instructions" followed by "input" (a string, or the
	// contents of the message items of an input array, in order); only its first MaxPrompt
	// bytes when MaxPrompt is positive. The instructions come first wherever they are in the
	// body, as the engine renders them: the system message ahead of the input. A prompt that is
	// one string without escapes aliases the parsed data (no copy); otherwise the text is
	// decoded into a buffer that the next Parse reuses.
	Prompt []byte
	// PromptBytes is the length of the whole decoded prompt text, including any part past
	// MaxPrompt.
	PromptBytes int
	// PromptTokenIDs counts prompt tokens given directly as token ids (arrays of integers).
	PromptTokenIDs int
	// Priority is the "priority" field (vLLM's per-request scheduling priority), when HasPriority.
	Priority int
	// HasPriority says the body set "priority" to a number (not null).
	HasPriority bool
	// SessionID is the conversation the request belongs to, for session affinity:
	// "metadata.session_id" when it is a string, else "user" (OpenAI's end-user id) when it is a
	// string; nil when neither is, or when the value is empty or longer than contract.MaxSessionID
	// bytes (a long "user" names no session, the request is not refused). It aliases the data when
	// the string has no escapes. The last member of each key wins.
	SessionID []byte
	// MaxPrompt bounds the text kept in Prompt (0 keeps all of it), so that a huge prompt is not
	// copied when only its first blocks are hashed. Reset and Parse keep it.
	MaxPrompt int

	buf   []byte // storage for Prompt when it does not alias the data
	owned bool   // Prompt is in buf
	seen  keySet // the routing keys read so far

	instr      []byte // the kept text of "instructions": aliases the data or is in ibuf
	instrBytes int    // the whole decoded length of "instructions"
	ibuf       []byte // storage for instr when the string has escapes

	opts              optsSpan // where the last "stream_options" is, for AppendIncludeUsage
	user, metaSession []byte   // the session id candidates: "user", "metadata.session_id"
}

// ErrMissingModel is returned by Parse when the body has no non-empty "model" string.
var ErrMissingModel = errors.New("openai: model is required")

// ErrAmbiguousKey is returned (wrapped, with the key) by Parse when a routing key (model, stream,
// priority) appears twice, or also under a spelling that differs only in case. JSON readers
// disagree on such bodies (encoding/json folds case and keeps the last duplicate; others keep the
// first or match exactly), so a body that one reader routes as one model could reach another as
// a different one.
var ErrAmbiguousKey = errors.New("openai: ambiguous key")

// Describe returns the message and the offending field ("param" in OpenAI's error body, "" for
// none) of a 400 answer to a body Parse refused with err. Both tiers answer with it, so a client
// gets the same words from either.
func Describe(err error) (message, param string) {
	var amb *AmbiguousKeyError
	switch {
	case errors.Is(err, ErrMissingModel):
		return "you must provide a model parameter", "model"
	case errors.As(err, &amb):
		return "invalid request body: " + amb.Error(), amb.Key
	}
	return "invalid request body: " + strings.TrimPrefix(err.Error(), "openai: "), ""
}

// keySet is a set of routing keys, one bit each.
type keySet uint8

const (
	keyModel keySet = 1 << iota
	keyStream
	keyPriority
)

// routingKeys are the keys that must appear once and only in their exact spelling.
var routingKeys = [...]struct {
	name string
	bit  keySet
}{{"model", keyModel}, {"stream", keyStream}, {"priority", keyPriority}}

// AmbiguousKeyError is the error Parse returns for an ambiguous routing key; it wraps
// ErrAmbiguousKey.
type AmbiguousKeyError struct {
	// Key is the routing key's exact name ("model", "stream" or "priority").
	Key string
	// Found is the key as it appeared the second time (equal to Key for a plain duplicate).
	Found string
}

// Error implements error.
func (e *AmbiguousKeyError) Error() string {
	if e.Found == e.Key {
		return fmt.Sprintf("the key %q appears more than once", e.Key)
	}
	return fmt.Sprintf("the key %q differs from %q only in case", e.Found, e.Key)
}

// Unwrap makes errors.Is(err, ErrAmbiguousKey) hold.
func (e *AmbiguousKeyError) Unwrap() error { return ErrAmbiguousKey }

// Reset clears b, keeping MaxPrompt and the prompt buffers' capacity.
func (b *Body) Reset() {
	*b = Body{MaxPrompt: b.MaxPrompt, buf: b.buf[:0], ibuf: b.ibuf[:0]}
}

// Release drops b's references to the parsed data (Prompt and SessionID may alias it), and its prompt buffers
// when they grew past maxBuf bytes, so that a Body kept in a pool holds neither a request body nor
// a huge buffer.
func (b *Body) Release(maxBuf int) {
	b.Prompt, b.instr = nil, nil
	b.SessionID, b.user, b.metaSession = nil, nil, nil
	if cap(b.buf) > maxBuf {
		b.buf = nil
	}
	if cap(b.ibuf) > maxBuf {
		b.ibuf = nil
	}
}

// EstimatedPromptTokens estimates the prompt length in tokens (about four characters a token).
func (b *Body) EstimatedPromptTokens() int {
	return (b.PromptBytes+3)/4 + b.PromptTokenIDs
}

// resetPrompt forgets the prompt read so far (a repeated "prompt" or "messages" member wins).
func (b *Body) resetPrompt() {
	b.Prompt, b.PromptBytes, b.PromptTokenIDs, b.buf, b.owned = nil, 0, 0, b.buf[:0], false
}

// limit is the number of prompt bytes kept.
func (b *Body) limit() int {
	if b.MaxPrompt <= 0 {
		return math.MaxInt
	}
	return b.MaxPrompt
}

// text adds the string at the cursor to the prompt. The first string aliases the data when it
// has no escapes; later strings are decoded into buf, up to MaxPrompt bytes.
func (b *Body) text(s *scanner) error {
	limit := b.limit()
	if b.PromptBytes == 0 && !b.owned {
		if v, ok := s.plainStr(); ok {
			n := min(len(v), limit)
			b.Prompt, b.PromptBytes = v[:n:n], len(v) // capped: appending to Prompt copies
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
// A syntax error is wrapped with the offset; a missing model yields ErrMissingModel; a routing key
// given twice or in another case yields an *AmbiguousKeyError.
func Parse(data []byte, b *Body) error {
	b.Reset()
	s := scanner{data: data}
	if s.ws() != '{' {
		return fmt.Errorf("openai: body must be a JSON object")
	}
	if err := s.object(func(key []byte) error { return b.member(&s, key) }); err != nil {
		var amb *AmbiguousKeyError
		if errors.As(err, &amb) {
			return err
		}
		return fmt.Errorf("openai: malformed JSON: %w", err)
	}
	if err := s.end(); err != nil {
		return fmt.Errorf("openai: malformed JSON: %w", err)
	}
	b.joinInstructions()
	b.SessionID = b.metaSession
	if b.SessionID == nil {
		b.SessionID = b.user
	}
	if b.Model == "" {
		return ErrMissingModel
	}
	return nil
}

// member reads one top-level member.
func (b *Body) member(s *scanner, key []byte) error {
	if err := b.once(key); err != nil {
		return err
	}
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
	case "priority":
		return s.integer(&b.Priority, &b.HasPriority)
	case "stream_options":
		return b.streamOptions(s)
	case "max_tokens", "max_completion_tokens", "max_output_tokens":
		return s.count(&b.MaxTokens)
	case "prompt", "input":
		b.resetPrompt()
		return b.promptValue(s, 0)
	case "messages":
		b.resetPrompt()
		return s.arrayOrNull(func() error { return b.message(s) })
	case "instructions":
		return b.instructions(s)
	case "user":
		return sessionValue(s, &b.user, 1)
	case "metadata":
		return b.metadata(s)
	}
	return s.skip(1)
}

// once records key when it is a routing key, failing when that key was read before or when key
// is another spelling of one (equal under Unicode case folding, as encoding/json matches names).
func (b *Body) once(key []byte) error {
	if len(key) < len("model") || len(key) > 2*len("priority") {
		return nil // no spelling of a routing key has this length (a folded rune is at most 3 bytes)
	}
	for _, k := range routingKeys {
		exact := string(key) == k.name
		if !exact && !strings.EqualFold(string(key), k.name) {
			continue
		}
		if !exact || b.seen&k.bit != 0 {
			return &AmbiguousKeyError{Key: k.name, Found: string(key)}
		}
		b.seen |= k.bit
		return nil
	}
	return nil
}

func (b *Body) streamOptions(s *scanner) error {
	c := s.ws()
	b.opts = optsSpan{kind: optsObject, start: s.pos}
	if c == 'n' {
		b.opts.kind = optsNull
		err := s.literal("null")
		b.opts.end = s.pos
		return err
	}
	err := s.object(func(key []byte) error {
		b.opts.members = true
		if string(key) != "include_usage" {
			return s.skip(2)
		}
		s.ws()
		b.opts.usageStart = s.pos
		err := s.boolean(&b.IncludeUsage)
		b.opts.usageEnd = s.pos
		return err
	})
	b.opts.end = s.pos
	return err
}

// promptValue reads a prompt: a string, an array of strings, an array of token ids, an array
// of arrays of token ids, or (the Responses API's input) an array of input items.
func (b *Body) promptValue(s *scanner, depth int) error {
	switch c := s.ws(); {
	case c == '"':
		return b.text(s)
	case c == '[' && depth < 2:
		return s.array(func() error { return b.promptValue(s, depth+1) })
	case c == '{' && depth == 1:
		return b.inputItem(s)
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
		return b.content(s)
	})
}

// content reads a message's content: a string, or an array of parts whose text counts.
func (b *Body) content(s *scanner) error {
	switch s.ws() {
	case '"':
		return b.text(s)
	case '[':
		return s.array(func() error { return b.contentPart(s) })
	}
	return s.skip(3)
}

// inputItem reads one item of a Responses API input array. A message (an item with no "type",
// or with the type "message"; the last "type" member counts) adds its content to the prompt, as
// a chat message does; any other item (a function call or its output, reasoning, an item
// reference) adds nothing, so the text its content added is taken back.
func (b *Body) inputItem(s *scanner) error {
	mark := b.mark()
	message := true
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "content":
			return b.content(s)
		case "type":
			if s.ws() != '"' {
				message = false
				return s.skip(3)
			}
			v, err := s.str(nil)
			message = string(v) == "message"
			return err
		}
		return s.skip(3)
	})
	if !message {
		b.rollback(mark)
	}
	return err
}

// promptMark is the prompt's state at one point of the parse, to go back to.
type promptMark struct {
	prompt     []byte
	bytes, ids int
}

func (b *Body) mark() promptMark {
	return promptMark{b.Prompt, b.PromptBytes, b.PromptTokenIDs}
}

// rollback forgets the prompt text read since m. Text is only ever appended, so the buffer's
// first bytes are still those of m; when m's prompt aliased the data and text since then was
// copied into the buffer after it, the buffer keeps that copy (owned), so that the next item
// does not copy the prompt again: a body of one long string followed by many small items
// that are not messages would otherwise copy the string once per item (quadratic time).
func (b *Body) rollback(m promptMark) {
	b.PromptBytes, b.PromptTokenIDs = m.bytes, m.ids
	if b.owned {
		b.buf = b.buf[:len(m.prompt)]
		b.Prompt = b.buf
		return
	}
	b.Prompt = m.prompt
}

// instructions reads "instructions" (the Responses API's system message): a string; null or any
// other value means none. The last member wins. Parse puts the text before the prompt's.
func (b *Body) instructions(s *scanner) error {
	b.instr, b.instrBytes = nil, 0
	if s.ws() != '"' {
		return s.skip(1)
	}
	if v, ok := s.plainStr(); ok {
		n := min(len(v), b.limit())
		b.instr, b.instrBytes = v[:n:n], len(v)
		return nil
	}
	var err error
	b.ibuf, b.instrBytes, err = s.text(b.ibuf[:0], b.limit())
	b.instr = b.ibuf
	return err
}

// joinInstructions puts the instructions ahead of the text read from the input, keeping at most
// MaxPrompt bytes of the whole. Without input text the prompt is the instructions (aliasing the
// data when they had no escapes); otherwise the two are joined in buf.
func (b *Body) joinInstructions() {
	if b.instrBytes == 0 {
		return
	}
	if b.PromptBytes == 0 {
		b.Prompt, b.owned = b.instr, false
		b.PromptBytes = b.instrBytes
		return
	}
	k := len(b.instr)
	n := min(len(b.Prompt), max(b.limit()-k, 0))
	if b.owned { // the input's text is in buf: move it up and copy the instructions in front
		b.buf = slices.Grow(b.buf[:n], k)[:n+k]
		copy(b.buf[k:], b.buf[:n])
		copy(b.buf, b.instr)
	} else {
		b.buf = append(append(b.buf[:0], b.instr...), b.Prompt[:n]...)
		b.owned = true
	}
	b.Prompt = b.buf
	b.PromptBytes += b.instrBytes
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

// metadata reads "metadata" (a map of strings, OpenAI's request metadata): its "session_id" is
// a session id; null or any other value holds none.
func (b *Body) metadata(s *scanner) error {
	b.metaSession = nil
	if s.ws() != '{' {
		return s.skip(1)
	}
	return s.object(func(key []byte) error {
		if string(key) == "session_id" {
			return sessionValue(s, &b.metaSession, 2)
		}
		return s.skip(2)
	})
}

// sessionValue reads a session-id candidate into dst: the string, when it is not empty and at
// most contract.MaxSessionID bytes long once decoded; nil for any other value.
func sessionValue(s *scanner, dst *[]byte, depth int) error {
	*dst = nil
	if s.ws() != '"' {
		return s.skip(depth)
	}
	v, err := s.str(nil)
	if err == nil && len(v) > 0 && len(v) <= contract.MaxSessionID {
		*dst = v
	}
	return err
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

// integer reads an integer that fits in 32 bits, or null (ok false).
func (s *scanner) integer(dst *int, ok *bool) error {
	if s.ws() == 'n' {
		*dst, *ok = 0, false
		return s.literal("null")
	}
	num, err := s.number()
	if err != nil {
		return err
	}
	v, err := strconv.ParseInt(string(num), 10, 32)
	if err != nil {
		return s.errorf("expected an integer, found %s", num)
	}
	*dst, *ok = int(v), true
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
