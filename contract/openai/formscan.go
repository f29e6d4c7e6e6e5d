package openai

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"
)

// Bounds of the multipart reading.
const (
	// MaxFormModel bounds the model field's value, in bytes.
	MaxFormModel = 1 << 10
	// maxPartHeader bounds one part's header block.
	maxPartHeader = 16 << 10
	// maxBoundary is RFC 2046's bound on a boundary's length.
	maxBoundary = 70
	// maxPadding bounds the spaces and tabs after a delimiter (RFC 2046's transport padding).
	maxPadding = 64
)

// ErrForm is wrapped by every error of a multipart body the form reader refuses (a 400): not
// multipart/form-data, malformed, or with a model field missing, repeated, spelt in another case
// or not a plain short text.
var ErrForm = errors.New("openai: invalid multipart body")

// FormError is a multipart body refused by the form reader; it wraps ErrForm (and
// ErrMissingModel or ErrAmbiguousKey where those apply).
type FormError struct {
	// Reason says what is wrong.
	Reason string
	// Param names the offending field, "" for none.
	Param string
	err   error
}

// Error implements error.
func (e *FormError) Error() string { return "openai: invalid multipart body: " + e.Reason }

// Unwrap makes errors.Is(err, ErrForm) hold, and errors.Is(err, ErrMissingModel) or
// ErrAmbiguousKey where the model field is missing or repeated.
func (e *FormError) Unwrap() []error {
	if e.err != nil {
		return []error{ErrForm, e.err}
	}
	return []error{ErrForm}
}

func formErr(param, format string, args ...any) *FormError {
	return &FormError{Reason: fmt.Sprintf(format, args...), Param: param}
}

// FormBoundary returns the boundary of a multipart/form-data Content-Type value, or a
// *FormError for any other type or a missing or invalid boundary.
func FormBoundary(contentType string) (string, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" {
		return "", formErr("", "Content-Type must be multipart/form-data with a boundary")
	}
	b := params["boundary"]
	if b == "" || len(b) > maxBoundary || strings.ContainsAny(b, "\r\n") {
		return "", formErr("", "the multipart boundary must be 1 to %d characters", maxBoundary)
	}
	return b, nil
}

// formState is where the scanner is in the body.
type formState uint8

const (
	statePreamble formState = iota // before the first delimiter
	stateDelim                     // just after a delimiter: "--" closes, padding and CRLF open a part
	stateHeader                    // in a part's header block
	stateContent                   // in a part's content
	stateDone                      // after the closing delimiter: the epilogue is ignored
)

// formScanner reads a multipart/form-data body fed to it in pieces, holding at most a part's
// header block and a delimiter's length of it, and keeps the value of its "model" field. It
// refuses a body whose model field is missing, repeated, spelt in another case, a file, encoded
// or not a short UTF-8 text without control characters, and any malformed structure, so that
// a body it accepts gives the model every multipart reader finds.
type formScanner struct {
	delim   []byte // "\r\n--" + boundary
	state   formState
	pending []byte // bytes fed but not consumed yet
	inModel bool   // the current part is the model field
	value   []byte // the model field's value so far
	model   string
	models  int // model fields completed
	err     error
}

func newFormScanner(boundary string) *formScanner {
	// The body is read as if it began with CRLF, so that a first delimiter at its very start
	// matches the CRLF-led delimiter like every other.
	return &formScanner{delim: []byte("\r\n--" + boundary), pending: []byte("\r\n")}
}

// modelKnown reports whether the model field has been read in whole.
func (s *formScanner) modelKnown() bool { return s.models > 0 && s.err == nil }

// write feeds p to the scanner; it returns the first error of the body (and keeps returning it).
func (s *formScanner) write(p []byte) error {
	if s.err != nil {
		return s.err
	}
	if s.state == stateDone {
		return nil
	}
	s.pending = append(s.pending, p...)
	for s.err == nil && s.step() {
	}
	if s.err == nil && len(s.pending) == 0 && cap(s.pending) > 2*maxPartHeader {
		s.pending = nil // a large piece went through: do not keep its buffer
	}
	return s.err
}

// close ends the body: it must have reached its closing delimiter with exactly one model field.
func (s *formScanner) close() error {
	if s.err != nil {
		return s.err
	}
	switch {
	case s.state != stateDone:
		s.err = formErr("", "the body ended before its closing boundary")
	case s.models == 0:
		s.err = &FormError{Reason: "you must provide a model field", Param: "model", err: ErrMissingModel}
	}
	return s.err
}

// step consumes what it can of pending; it returns false when it needs more bytes.
func (s *formScanner) step() bool {
	switch s.state {
	case statePreamble, stateContent:
		return s.content()
	case stateDelim:
		return s.afterDelim()
	case stateHeader:
		return s.header()
	case stateDone:
		s.pending = s.pending[:0]
	}
	return false
}

// content consumes a part's content (or the preamble) up to the next delimiter.
func (s *formScanner) content() bool {
	i := bytes.Index(s.pending, s.delim)
	if i < 0 {
		// Everything but what may be the start of a delimiter is content.
		keep := min(len(s.pending), len(s.delim)-1)
		s.keepContent(s.pending[:len(s.pending)-keep])
		s.consume(len(s.pending) - keep)
		return false
	}
	s.keepContent(s.pending[:i])
	if s.err != nil {
		return false
	}
	s.consume(i + len(s.delim))
	if s.state == stateContent && s.inModel {
		s.endModel()
	}
	s.state = stateDelim
	return s.err == nil
}

// keepContent adds b to the model's value when the current part is the model field.
func (s *formScanner) keepContent(b []byte) {
	if s.state != stateContent || !s.inModel {
		return
	}
	if len(s.value)+len(b) > MaxFormModel {
		s.err = formErr("model", "the model field is over %d bytes", MaxFormModel)
		return
	}
	s.value = append(s.value, b...)
}

// endModel checks a completed model field.
func (s *formScanner) endModel() {
	s.models++
	s.inModel = false
	switch {
	case s.models > 1:
		s.err = &FormError{Reason: "the model field is given twice", Param: "model", err: ErrAmbiguousKey}
	case len(s.value) == 0:
		s.err = &FormError{Reason: "you must provide a model field", Param: "model", err: ErrMissingModel}
	case !utf8.Valid(s.value) || bytes.ContainsFunc(s.value, isControl):
		s.err = formErr("model", "the model field must be UTF-8 text without control characters")
	default:
		s.model = string(s.value)
	}
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// afterDelim reads what follows a delimiter: "--" (the closing one) or padding and CRLF.
func (s *formScanner) afterDelim() bool {
	if len(s.pending) < 2 {
		return false
	}
	if s.pending[0] == '-' && s.pending[1] == '-' {
		s.state = stateDone
		s.pending = s.pending[:0]
		return false
	}
	i := 0
	for i < len(s.pending) && (s.pending[i] == ' ' || s.pending[i] == '\t') {
		i++
	}
	switch {
	case i > maxPadding:
		s.err = formErr("", "malformed boundary line")
		return false
	case len(s.pending) < i+2:
		return false
	case s.pending[i] != '\r' || s.pending[i+1] != '\n':
		s.err = formErr("", "malformed boundary line")
		return false
	}
	s.consume(i + 2)
	s.state = stateHeader
	return true
}

// header reads a part's header block, up to the blank line that ends it.
func (s *formScanner) header() bool {
	end := 0
	if bytes.HasPrefix(s.pending, []byte("\r\n")) {
		end = 2 // no header at all
	} else if i := bytes.Index(s.pending, []byte("\r\n\r\n")); i >= 0 {
		end = i + 4
	}
	if end == 0 {
		if len(s.pending) > maxPartHeader {
			s.err = formErr("", "a part's headers are over %d bytes", maxPartHeader)
		}
		return false
	}
	if end > maxPartHeader {
		s.err = formErr("", "a part's headers are over %d bytes", maxPartHeader)
		return false
	}
	s.startPart(s.pending[:end-2])
	s.consume(end)
	s.state = stateContent
	return s.err == nil
}

// startPart reads a part's header lines (each ending in CRLF) and notes whether it is the model
// field.
func (s *formScanner) startPart(block []byte) {
	var disposition, encoding string
	var dispositions int
	for line := range bytes.SplitSeq(block, []byte("\r\n")) {
		if len(line) == 0 {
			continue
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(k) == 0 || k[0] == ' ' || k[0] == '\t' || bytes.ContainsAny(k, " \t") {
			s.err = formErr("", "malformed part header")
			return
		}
		switch {
		case strings.EqualFold(string(k), "Content-Disposition"):
			disposition = string(bytes.TrimSpace(v))
			dispositions++
		case strings.EqualFold(string(k), "Content-Transfer-Encoding"):
			encoding = strings.ToLower(string(bytes.TrimSpace(v)))
		}
	}
	if dispositions > 1 {
		s.err = formErr("", "a part has two Content-Disposition headers")
		return
	}
	name, file, ok := formName(disposition)
	if !ok {
		s.err = formErr("", "malformed Content-Disposition header")
		return
	}
	if !strings.EqualFold(name, "model") {
		return
	}
	switch {
	case name != "model":
		s.err = &FormError{Reason: fmt.Sprintf("the model field is spelt %q", name), Param: "model", err: ErrAmbiguousKey}
	case file:
		s.err = formErr("model", "the model field must be a text field, not a file")
	case encoding != "" && encoding != "7bit" && encoding != "8bit" && encoding != "binary":
		s.err = formErr("model", "the model field must not be transfer-encoded")
	default:
		s.inModel = true
		s.value = s.value[:0]
	}
}

// formName is a part's form field name from its Content-Disposition value ("" when it is not a
// form-data disposition, as mime/multipart reads it) and whether the part is a file; ok is false
// for a value that does not parse, which readers would read differently.
func formName(disposition string) (name string, file, ok bool) {
	if disposition == "" {
		return "", false, true
	}
	d, params, err := mime.ParseMediaType(disposition)
	if err != nil {
		return "", false, false
	}
	if d != "form-data" {
		return "", false, true
	}
	_, file = params["filename"]
	return params["name"], file, true
}

// consume drops the first n pending bytes.
func (s *formScanner) consume(n int) {
	s.pending = s.pending[:copy(s.pending, s.pending[n:])]
}
