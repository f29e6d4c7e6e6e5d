// Package syncbuf is test support: a bytes.Buffer that is safe for concurrent use, the
// destination of a logger or a child process's output that goroutines write while a test reads
// what was written so far. It is the one such buffer of the workspace's tests and test harnesses.
// The package imports only the standard library, so any module may use it.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent use. The zero value is an empty buffer ready to
// use; a Buffer must not be copied after first use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
