package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// The Azure trace's columns.
const (
	azureTimestamp = "TIMESTAMP"
	azureContext   = "ContextTokens"
	azureGenerated = "GeneratedTokens"
)

// azureLayouts are the timestamp forms accepted: the trace's own ("2023-11-16 18:15:46.6805900",
// UTC, up to 100 ns) and RFC 3339.
var azureLayouts = []string{"2006-01-02 15:04:05.999999999", time.RFC3339Nano}

// azureReader reads the Azure LLM inference trace CSV: a header naming at least TIMESTAMP,
// ContextTokens and GeneratedTokens (in any order, other columns ignored), then one row per
// request. Fields are plain (no quoting); blank lines are skipped.
type azureReader struct {
	lines        *lineReader
	buf          []byte
	cols         int
	ts, ctx, gen int // column indexes
	first, last  time.Time
	started      bool
	err          error
}

func newAzureReader(r io.Reader) *azureReader {
	return &azureReader{lines: newLineReader(r), ts: -1}
}

func (a *azureReader) Next() (Record, error) {
	if a.err != nil {
		return Record{}, a.err
	}
	rec, err := a.next()
	if err != nil {
		if !errors.Is(err, io.EOF) {
			err = &LineError{Format: Azure, Line: max(1, a.lines.line), Err: err}
		}
		a.err = err
	}
	return rec, err
}

func (a *azureReader) next() (Record, error) {
	for {
		line, err := a.lines.next(&a.buf)
		if errors.Is(err, io.EOF) && a.ts < 0 {
			return Record{}, errors.New("empty file: no header")
		}
		if err != nil {
			return Record{}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if a.ts < 0 {
			if err := a.header(string(line)); err != nil {
				return Record{}, err
			}
			continue
		}
		rec, err := a.row(string(line))
		if err != nil {
			return Record{}, err
		}
		rec.Line = a.lines.line
		return rec, nil
	}
}

// header finds the columns.
func (a *azureReader) header(line string) error {
	line = strings.TrimPrefix(line, "\ufeff")
	fields := strings.Split(line, ",")
	idx := map[string]int{}
	for i, f := range fields {
		idx[strings.TrimSpace(f)] = i
	}
	for _, c := range []struct {
		name string
		dst  *int
	}{{azureTimestamp, &a.ts}, {azureContext, &a.ctx}, {azureGenerated, &a.gen}} {
		i, ok := idx[c.name]
		if !ok {
			a.ts = -1
			return fmt.Errorf("header %q lacks column %s (want %s,%s,%s)", truncate(line), c.name,
				azureTimestamp, azureContext, azureGenerated)
		}
		*c.dst = i
	}
	a.cols = len(fields)
	return nil
}

// row parses one request.
func (a *azureReader) row(line string) (Record, error) {
	fields := strings.Split(line, ",")
	if len(fields) != a.cols {
		return Record{}, fmt.Errorf("%d fields, the header has %d", len(fields), a.cols)
	}
	ts, err := parseTime(strings.TrimSpace(fields[a.ts]))
	if err != nil {
		return Record{}, err
	}
	in, err := parseCount(azureContext, fields[a.ctx])
	if err != nil {
		return Record{}, err
	}
	out, err := parseCount(azureGenerated, fields[a.gen])
	if err != nil {
		return Record{}, err
	}
	if err := checkLengths(in, out, azureContext, azureGenerated); err != nil {
		return Record{}, err
	}
	if !a.started {
		a.first, a.last, a.started = ts, ts, true
	}
	if ts.Before(a.last) {
		return Record{}, fmt.Errorf("%s: %s is before the previous row's %s (the trace must be in arrival order)",
			azureTimestamp, fields[a.ts], a.last.Format(azureLayouts[0]))
	}
	at := ts.Sub(a.first)
	if at > MaxTimestamp {
		return Record{}, fmt.Errorf("%s: %s is more than %s after the first row", azureTimestamp, fields[a.ts], MaxTimestamp)
	}
	a.last = ts
	return Record{At: at, InputTokens: in, OutputTokens: out}, nil
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range azureLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s: %q is not a time like 2023-11-16 18:15:46.6805900", azureTimestamp, truncate(s))
}

func parseCount(name, s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a whole number", name, truncate(s))
	}
	return n, nil
}

// truncate shortens s for an error message.
func truncate(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
