package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// LineError is an error found on one line of a trace.
type LineError struct {
	// Format is the trace's format; Line the line number, from 1.
	Format Format
	Line   int
	// Err says what is wrong.
	Err error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("trace %s line %d: %v", e.Format, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ErrLineTooLong is the error of a line longer than MaxLineBytes.
var ErrLineTooLong = fmt.Errorf("line longer than %d bytes", MaxLineBytes)

// lineReader reads a file line by line, each at most MaxLineBytes, counting lines.
type lineReader struct {
	br   *bufio.Reader
	line int
	err  error // sticky
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its line ending (valid until the following call), or
// io.EOF. A line longer than MaxLineBytes is an ErrLineTooLong.
func (l *lineReader) next(buf *[]byte) ([]byte, error) {
	if l.err != nil {
		return nil, l.err
	}
	*buf = (*buf)[:0]
	for {
		chunk, err := l.br.ReadSlice('\n')
		if len(*buf)+len(chunk) > MaxLineBytes+1 { // +1: the newline itself
			l.line++
			l.err = ErrLineTooLong
			return nil, l.err
		}
		*buf = append(*buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			l.err = fmt.Errorf("read: %w", err)
			return nil, l.err
		}
		if len(*buf) == 0 && err != nil {
			l.err = io.EOF
			return nil, l.err
		}
		l.line++
		line := bytes.TrimRight(*buf, "\r\n")
		if len(line) > MaxLineBytes {
			l.err = ErrLineTooLong
			return nil, l.err
		}
		return line, nil
	}
}
