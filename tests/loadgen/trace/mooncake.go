package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// mooncakeLine is one JSONL object; pointers tell a missing field from a zero.
type mooncakeLine struct {
	Timestamp    *float64  `json:"timestamp"`
	InputLength  *int      `json:"input_length"`
	OutputLength *int      `json:"output_length"`
	HashIDs      *[]uint64 `json:"hash_ids"`
}

// mooncakeReader reads Mooncake JSONL. Fields other than the four it uses are ignored (other
// Mooncake traces carry more); blank lines are skipped.
type mooncakeReader struct {
	lines *lineReader
	buf   []byte
	last  time.Duration
	err   error
}

func newMooncakeReader(r io.Reader) *mooncakeReader {
	return &mooncakeReader{lines: newLineReader(r)}
}

func (m *mooncakeReader) Next() (Record, error) {
	if m.err != nil {
		return Record{}, m.err
	}
	rec, err := m.next()
	if err != nil {
		if !errors.Is(err, io.EOF) {
			err = &LineError{Format: Mooncake, Line: max(1, m.lines.line), Err: err}
		}
		m.err = err
	}
	return rec, err
}

func (m *mooncakeReader) next() (Record, error) {
	for {
		line, err := m.lines.next(&m.buf)
		if err != nil {
			return Record{}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		rec, err := parseMooncake(line)
		if err != nil {
			return Record{}, err
		}
		if rec.At < m.last {
			return Record{}, fmt.Errorf(
				"timestamp: %d ms is before the previous record's %d ms (the trace must be in arrival order)",
				rec.At.Milliseconds(),
				m.last.Milliseconds(),
			)
		}
		m.last, rec.Line = rec.At, m.lines.line
		return rec, nil
	}
}

// parseMooncake decodes and checks one line.
func parseMooncake(line []byte) (Record, error) {
	var l mooncakeLine
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&l); err != nil {
		return Record{}, fmt.Errorf("not a JSON object of the Mooncake format: %w", err)
	}
	if dec.More() {
		return Record{}, errors.New("more than one JSON value on the line")
	}
	switch {
	case l.Timestamp == nil:
		return Record{}, errors.New("timestamp: missing")
	case l.InputLength == nil:
		return Record{}, errors.New("input_length: missing")
	case l.OutputLength == nil:
		return Record{}, errors.New("output_length: missing")
	case l.HashIDs == nil:
		return Record{}, errors.New("hash_ids: missing")
	}
	at, err := millis(*l.Timestamp)
	if err != nil {
		return Record{}, err
	}
	rec := Record{At: at, InputTokens: *l.InputLength, OutputTokens: *l.OutputLength, HashIDs: *l.HashIDs}
	if err := checkLengths(rec.InputTokens, rec.OutputTokens, "input_length", "output_length"); err != nil {
		return Record{}, err
	}
	if want := (rec.InputTokens + BlockTokens - 1) / BlockTokens; len(rec.HashIDs) != want {
		return Record{}, fmt.Errorf("hash_ids: %d blocks for input_length %d (want %d blocks of %d tokens)",
			len(rec.HashIDs), rec.InputTokens, want, BlockTokens)
	}
	return rec, nil
}

// millis converts a timestamp in milliseconds, checking its range.
func millis(ms float64) (time.Duration, error) {
	if math.IsNaN(ms) || ms < 0 || ms > float64(MaxTimestamp/time.Millisecond) {
		return 0, fmt.Errorf("timestamp: %v ms is outside [0, %d]", ms, MaxTimestamp/time.Millisecond)
	}
	return time.Duration(math.Round(ms * float64(time.Millisecond))), nil
}

// checkLengths checks a record's token counts: a prompt of at least one token, an output of
// zero or more (a trace may record empty answers), both at most MaxTokens.
func checkLengths(in, out int, inName, outName string) error {
	if in < 1 || in > MaxTokens {
		return fmt.Errorf("%s: %d is outside [1, %d]", inName, in, MaxTokens)
	}
	if out < 0 || out > MaxTokens {
		return fmt.Errorf("%s: %d is outside [0, %d]", outName, out, MaxTokens)
	}
	return nil
}
