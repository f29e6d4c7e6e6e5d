package openai

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
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

// str returns the string at the cursor (the opening quote is next): a slice of the input when it
// has no escapes, else the string decoded and appended to dst.
func (s *scanner) str(dst []byte) ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return dst, err
	}
	start := s.pos
	s.plain()
	if s.pos >= len(s.data) {
		return dst, errEOF
	}
	switch s.data[s.pos] {
	case '"':
		s.pos++
		return s.data[start : s.pos-1], nil
	case '\\':
		s.decoded = true
		return s.strEscaped(append(dst, s.data[start:s.pos]...))
	}
	return dst, s.errorf("control character in string")
}

// strEscaped continues decoding a string at its first backslash.
func (s *scanner) strEscaped(dst []byte) ([]byte, error) {
	for {
		start := s.pos
		s.plain()
		dst = append(dst, s.data[start:s.pos]...)
		if s.pos >= len(s.data) {
			return dst, errEOF
		}
		switch s.data[s.pos] {
		case '"':
			s.pos++
			return dst, nil
		case '\\':
			var err error
			if dst, err = s.escape(dst); err != nil {
				return dst, err
			}
		default:
			return dst, s.errorf("control character in string")
		}
	}
}

// plainStr returns the string at the cursor (the opening quote is next), aliasing the input, and
// consumes it when it has no escapes; otherwise ok is false and the cursor has not moved.
func (s *scanner) plainStr() (v []byte, ok bool) {
	if s.ws() != '"' {
		return nil, false
	}
	start := s.pos + 1
	s.pos = start
	s.plain()
	if s.pos < len(s.data) && s.data[s.pos] == '"' {
		s.pos++
		return s.data[start : s.pos-1], true
	}
	s.pos = start - 1
	return nil, false
}

// text decodes the string at the cursor (the opening quote is next), appending it to dst while
// dst is shorter than limit, and returns dst and the string's whole decoded length.
func (s *scanner) text(dst []byte, limit int) ([]byte, int, error) {
	if err := s.expect('"'); err != nil {
		return dst, 0, err
	}
	var esc [4]byte
	n := 0
	for {
		start := s.pos
		s.plain()
		n += s.pos - start
		dst = appendMax(dst, s.data[start:s.pos], limit)
		if s.pos >= len(s.data) {
			return dst, n, errEOF
		}
		switch s.data[s.pos] {
		case '"':
			s.pos++
			return dst, n, nil
		case '\\':
			e, err := s.escape(esc[:0])
			if err != nil {
				return dst, n, err
			}
			n += len(e)
			dst = appendMax(dst, e, limit)
		default:
			return dst, n, s.errorf("control character in string")
		}
	}
}

// appendMax appends as much of src to dst as keeps it within limit bytes.
func appendMax(dst, src []byte, limit int) []byte {
	if room := limit - len(dst); room < len(src) {
		src = src[:max(room, 0)]
	}
	return append(dst, src...)
}

// skipStr validates the string at the cursor (the opening quote is next) without decoding it.
func (s *scanner) skipStr() error {
	if err := s.expect('"'); err != nil {
		return err
	}
	var esc [4]byte
	for {
		s.plain()
		if s.pos >= len(s.data) {
			return errEOF
		}
		switch s.data[s.pos] {
		case '"':
			s.pos++
			return nil
		case '\\':
			if _, err := s.escape(esc[:0]); err != nil {
				return err
			}
		default:
			return s.errorf("control character in string")
		}
	}
}

// Masks for plain: one bit or byte value in each of the eight bytes of a word.
const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// plain advances the cursor to the next byte that ends a run of plain string content: a quote,
// a backslash or a control character (or the end of input). It tests eight bytes at a time.
func (s *scanner) plain() {
	d, i := s.data, s.pos
	for ; i+8 <= len(d); i += 8 {
		if m := specialBytes(binary.LittleEndian.Uint64(d[i:])); m != 0 {
			s.pos = i + bits.TrailingZeros64(m)/8
			return
		}
	}
	for ; i < len(d); i++ {
		if c := d[i]; c == '"' || c == '\\' || c < 0x20 {
			break
		}
	}
	s.pos = i
}

// specialBytes flags (with the high bit) the bytes of the little-endian word x that are a quote,
// a backslash or below 0x20. Borrows can flag a byte above a flagged one, never below, so the
// lowest flag is exact.
func specialBytes(x uint64) uint64 {
	q := x ^ (lowBits * '"')
	b := x ^ (lowBits * '\\')
	return (((q - lowBits) &^ q) | ((b - lowBits) &^ b) | ((x - lowBits*0x20) &^ x)) & highBits
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
		return s.skipStr()
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
		key, err := s.str(s.key[:0])
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
