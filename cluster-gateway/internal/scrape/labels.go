package scrape

import (
	"errors"
	"math"
	"strconv"
)

// label is one parsed label pair.
type label struct{ name, value string }

var (
	errUnterminatedLabels = errors.New("unterminated label set")
	errBadLabel           = errors.New("malformed label")
)

// parseLabels parses the label set that starts at b[i] == '{' and returns the index after '}'.
// Label values may contain escaped quotes, backslashes and newlines. Only the labels named in keep
// are returned; the others are validated and skipped without allocating.
func parseLabels(b []byte, i int, keep []string) (int, []label, error) {
	var out []label
	i++ // '{'
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return 0, nil, errUnterminatedLabels
		}
		if b[i] == '}' {
			return i + 1, out, nil
		}
		start := i
		for i < len(b) && isNameByte(b[i], i == start) {
			i++
		}
		name := b[start:i]
		i = skipSpace(b, i)
		if len(name) == 0 || i+1 >= len(b) || b[i] != '=' {
			return 0, nil, errBadLabel
		}
		i = skipSpace(b, i+1)
		if i >= len(b) || b[i] != '"' {
			return 0, nil, errBadLabel
		}
		collect := wanted(keep, name)
		value, next, err := parseQuoted(b, i+1, collect)
		if err != nil {
			return 0, nil, err
		}
		if collect {
			out = append(out, label{name: string(name), value: value})
		}
		i = skipSpace(b, next)
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
}

// parseQuoted reads a label value starting after its opening quote and returns it (when collect
// is set, unescaped) and the index after the closing quote.
func parseQuoted(b []byte, i int, collect bool) (string, int, error) {
	var buf []byte
	for ; i < len(b); i++ {
		c := b[i]
		switch c {
		case '"':
			return string(buf), i + 1, nil
		case '\\':
			if i+1 >= len(b) {
				return "", 0, errUnterminatedLabels
			}
			i++
			c = unescape(b[i])
		}
		if collect {
			buf = append(buf, c)
		}
	}
	return "", 0, errUnterminatedLabels
}

// unescape maps the byte after a backslash to the byte it stands for.
func unescape(c byte) byte {
	if c == 'n' {
		return '\n'
	}
	return c // '\\' and '"' stand for themselves; others are kept leniently
}

// wanted reports whether name is in keep, without allocating.
func wanted(keep []string, name []byte) bool {
	for _, k := range keep {
		if k == string(name) {
			return true
		}
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return i
}

func isNameByte(c byte, first bool) bool {
	switch {
	case c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
		return true
	case c >= '0' && c <= '9':
		return !first
	}
	return false
}

// labelValue returns the value of label name, or "".
func labelValue(lbls []label, name string) string {
	for _, l := range lbls {
		if l.name == name {
			return l.value
		}
	}
	return ""
}

// labelInt returns the value of label name as a non-negative integer (0 when absent or invalid;
// "16" and "16.0" are both accepted).
func labelInt(lbls []label, name string) int {
	v, err := strconv.ParseFloat(labelValue(lbls, name), 64)
	if err != nil || math.IsNaN(v) {
		return 0
	}
	return nonNegInt(v)
}
