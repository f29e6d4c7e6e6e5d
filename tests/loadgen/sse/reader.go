// Package sse reads the server-sent event streams of OpenAI-compatible servers: events from the
// wire (Reader) and the JSON chunks they carry (ParseChunk). Both treat their input as untrusted.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxEventBytes bounds one event's data; a longer event is an error, not an allocation.
const MaxEventBytes = 8 << 20

// ErrEventTooLarge is returned when an event's data exceeds MaxEventBytes.
var ErrEventTooLarge = errors.New("sse: event too large")

// Event is one dispatched event. Data is only valid until the next call to Next.
type Event struct {
	// Name is the event field ("" when absent, which SSE calls "message").
	Name string
	// Data is the event's data lines joined by "\n".
	Data []byte
}

// Reader splits an SSE stream into events. It is not safe for concurrent use.
type Reader struct {
	br      *bufio.Reader
	data    []byte
	name    []byte
	hasData bool
}

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 32<<10)}
}

// Next returns the next event with data. It returns io.EOF when the stream ends after a complete
// line and io.ErrUnexpectedEOF when it ends inside a line.
func (r *Reader) Next() (Event, error) {
	r.data, r.name, r.hasData = r.data[:0], r.name[:0], false
	for {
		line, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && r.hasData {
				// The last line was complete but the blank line never came: dispatch anyway.
				return Event{Name: string(r.name), Data: r.data}, nil
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if r.hasData {
				return Event{Name: string(r.name), Data: r.data}, nil
			}
			r.name = r.name[:0]
			continue
		}
		if err := r.field(line); err != nil {
			return Event{}, err
		}
	}
}

// field applies one non-empty line.
func (r *Reader) field(line []byte) error {
	if line[0] == ':' {
		return nil // comment
	}
	name, value, _ := bytes.Cut(line, []byte{':'})
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(name) {
	case "data":
		if r.hasData {
			r.data = append(r.data, '\n')
		}
		if len(r.data)+len(value) > MaxEventBytes {
			return ErrEventTooLarge
		}
		r.data = append(r.data, value...)
		r.hasData = true
	case "event":
		r.name = append(r.name[:0], value...)
	}
	return nil
}

// readLine returns one line without its terminator (\n, \r\n). The slice is only valid until the
// next read.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(long) > MaxEventBytes {
				return nil, ErrEventTooLarge
			}
			line, err = r.br.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("sse: read: %w", err)
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}
