package flagenv

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxFileBytes bounds a file of flag values: it is configuration, a few kilobytes.
const maxFileBytes = 1 << 20

// line is one flag of a file of flag values.
type line struct {
	n        int // 1-based line number
	name     string
	value    string
	hasValue bool // false for a bare name (a bool flag)
}

// parseFile splits a file of flag values (see the package documentation) into its flags.
func parseFile(path, data string) ([]line, error) {
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than a file of flag values may hold (%d)", path, len(data), maxFileBytes)
	}
	var out []line
	var errs []error
	for i, text := range strings.Split(data, "\n") {
		l, ok, err := parseLine(i+1, text)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s:%d: %w", path, i+1, err))
		case ok:
			out = append(out, l)
		}
	}
	return out, errors.Join(errs...)
}

// parseLine parses one line; ok is false for a blank line or a comment.
func parseLine(n int, text string) (l line, ok bool, err error) {
	text = strings.TrimSpace(strings.TrimSuffix(text, "\r"))
	if text == "" || text[0] == '#' {
		return line{}, false, nil
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(text, "-"), "-")
	end := strings.IndexAny(rest, "= \t")
	if end < 0 {
		end = len(rest)
	}
	l = line{n: n, name: rest[:end]}
	if l.name == "" || strings.HasPrefix(l.name, "-") {
		return line{}, false, fmt.Errorf("want name=value, got %q", text)
	}
	rest = strings.TrimLeft(rest[end:], " \t")
	if v, eq := strings.CutPrefix(rest, "="); eq {
		rest, l.hasValue = strings.TrimSpace(v), true
	} else if rest != "" {
		l.hasValue = true
	}
	l.value = rest
	if strings.HasPrefix(rest, `"`) {
		if l.value, err = strconv.Unquote(rest); err != nil {
			return line{}, false, fmt.Errorf("--%s: bad quoted value %s", l.name, rest)
		}
	}
	return l, true, nil
}
