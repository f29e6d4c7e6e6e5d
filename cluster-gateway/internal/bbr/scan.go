package bbr

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting while skipping values so hostile bodies cannot exhaust the stack.
const maxDepth = 256

var errEOF = errors.New("unexpected end of JSON input")

// scanner is a validating single-pass JSON reader over a byte slice. It never copies the input
// except when decoding a string into a caller's buffer.
type scanner struct {
	data []byte
	pos  int
	// key holds the decoded object key when it has escapes; reused for every key.
	key []byte
	// decoded is set when the last string read had escapes (and was decoded into a buffer).
	decoded bool
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", s.pos, fmt.Sprintf(format, args...))
}

// ws skips whitespace and returns the next byte (0 at the end of input).
func (s *scanner) ws() byte {
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; c {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return c
		}
	}
	return 0
}

// consume skips whitespace and consumes c if it is next.
func (s *scanner) consume(c byte) bool {
	if s.ws() == c && s.pos < len(s.data) {
		s.pos++
		return true
	}
	return false
}

func (s *scanner) expect(c byte) error {
	if s.consume(c) {
		return nil
	}
	if s.pos >= len(s.data) {
		return errEOF
	}
	return s.errorf("expected %q, found %q", c, s.data[s.pos])
}

// literal consumes one of true, false, null.
func (s *scanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return s.errorf("invalid literal")
	}
	s.pos += len(word)
	return nil
}

// str decodes the string at the cursor (the opening quote is next) and appends it to dst. When
// raw is true and the string has no escapes, the returned slice aliases the input instead.
func (s *scanner) str(dst []byte, raw bool) ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return dst, err
	}
	start := s.pos
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			seg := s.data[start:s.pos]
			s.pos++
			if raw {
				return seg, nil
			}
			return append(dst, seg...), nil
		case c == '\\':
			s.decoded = true
			return s.strEscaped(append(dst, s.data[start:s.pos]...))
		case c < 0x20:
			return dst, s.errorf("control character in string")
		}
		s.pos++
	}
	return dst, errEOF
}

// strEscaped continues decoding a string after its first backslash.
func (s *scanner) strEscaped(dst []byte) ([]byte, error) {
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return dst, nil
		case c == '\\':
			var err error
			if dst, err = s.escape(dst); err != nil {
				return dst, err
			}
			continue
		case c < 0x20:
			return dst, s.errorf("control character in string")
		}
		dst = append(dst, c)
		s.pos++
	}
	return dst, errEOF
}

// escape decodes one escape sequence starting at the backslash.
func (s *scanner) escape(dst []byte) ([]byte, error) {
	if s.pos+1 >= len(s.data) {
		return dst, errEOF
	}
	e := s.data[s.pos+1]
	s.pos += 2
	switch e {
	case '"', '\\', '/':
		return append(dst, e), nil
	case 'b':
		return append(dst, '\b'), nil
	case 'f':
		return append(dst, '\f'), nil
	case 'n':
		return append(dst, '\n'), nil
	case 'r':
		return append(dst, '\r'), nil
	case 't':
		return append(dst, '\t'), nil
	case 'u':
		return s.unicode(dst)
	}
	return dst, s.errorf("invalid escape %q", e)
}

// unicode decodes \uXXXX (the cursor is after "\u"), joining surrogate pairs.
func (s *scanner) unicode(dst []byte) ([]byte, error) {
	r, err := s.hex4()
	if err != nil {
		return dst, err
	}
	if utf16.IsSurrogate(r) {
		if s.pos+1 < len(s.data) && s.data[s.pos] == '\\' && s.data[s.pos+1] == 'u' {
			save := s.pos
			s.pos += 2
			r2, err := s.hex4()
			if err != nil {
				return dst, err
			}
			if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
				return utf8.AppendRune(dst, dec), nil
			}
			s.pos = save
		}
		r = utf8.RuneError
	}
	return utf8.AppendRune(dst, r), nil
}

func (s *scanner) hex4() (rune, error) {
	if len(s.data)-s.pos < 4 {
		return 0, errEOF
	}
	v, err := strconv.ParseUint(string(s.data[s.pos:s.pos+4]), 16, 32)
	if err != nil {
		return 0, s.errorf("invalid unicode escape")
	}
	s.pos += 4
	return rune(v), nil
}

// number consumes a JSON number and returns its bytes.
func (s *scanner) number() ([]byte, error) {
	start := s.pos
	if s.pos < len(s.data) && s.data[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(s.data) && s.data[s.pos] == '0':
		s.pos++
	case s.digits() == 0:
		return nil, s.errorf("invalid number")
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return nil, s.errorf("invalid number")
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return nil, s.errorf("invalid number")
		}
	}
	return s.data[start:s.pos], nil
}

func (s *scanner) digits() int {
	n := 0
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
		n++
	}
	return n
}

// skip consumes and validates any JSON value.
func (s *scanner) skip(depth int) error {
	if depth > maxDepth {
		return s.errorf("nesting too deep")
	}
	switch c := s.ws(); c {
	case '"':
		_, err := s.str(nil, true)
		return err
	case '{':
		return s.object(func(_ []byte) error { return s.skip(depth + 1) })
	case '[':
		return s.array(func() error { return s.skip(depth + 1) })
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	case 0:
		return errEOF
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			_, err := s.number()
			return err
		}
		return s.errorf("invalid character %q", c)
	}
}

// object consumes an object, calling member for each key with the cursor before the value. The
// key slice may alias the input or a scratch buffer; it is valid only during the call.
func (s *scanner) object(member func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.consume('}') {
		return nil
	}
	for {
		if s.ws() != '"' {
			return s.errorf("expected object key")
		}
		s.decoded = false
		key, err := s.str(s.key[:0], true)
		if s.decoded {
			s.key = key // keep the grown buffer for the next escaped key
		}
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
		if s.consume('}') {
			return nil
		}
		if err := s.expect(','); err != nil {
			return err
		}
	}
}

// array consumes an array, calling elem with the cursor before each element.
func (s *scanner) array(elem func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.consume(']') {
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		if s.consume(']') {
			return nil
		}
		if err := s.expect(','); err != nil {
			return err
		}
	}
}

// end reports an error unless only whitespace remains.
func (s *scanner) end() error {
	if s.ws() != 0 || s.pos < len(s.data) {
		return s.errorf("unexpected data after top-level value")
	}
	return nil
}
