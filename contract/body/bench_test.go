package body_test

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/switchyard-dev/switchyard/contract/body"
)

// readDeclared is how the gateway read a body before this package: a bytes.Buffer sized from
// the declared length, whatever arrives (its ReadFrom then grows it once more, wanting 512 bytes
// of room for the read that sees the end).
func readDeclared(r io.Reader, declared, limit int64) ([]byte, error) {
	size := int64(512)
	if declared > 0 {
		size = declared + 1
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	if _, err := buf.ReadFrom(io.LimitReader(r, limit+1)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// readExact is how the router read a body of declared length before this package: one buffer
// of exactly that length, allocated before the first byte arrives.
func readExact(r io.Reader, declared int64) ([]byte, error) {
	buf := make([]byte, declared)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// wire delivers a body in reads of at most 32 KiB, as net/http's body reader over a connection
// does (its bufio.Reader holds 4 KiB; larger reads go straight to the socket).
type wire struct {
	data []byte
	off  int
}

func (w *wire) Read(p []byte) (int, error) {
	if w.off == len(w.data) {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 32<<10)], w.data[w.off:])
	w.off += n
	return n, nil
}

var benchSizes = []int{1 << 10, 16 << 10, 100 << 10, 1 << 20}

// BenchmarkRead compares reading a body of declared length into a growing, budgeted Buffer
// (budget) with the declared-length buffers it replaces (declared: the gateway's, exact: the
// router's), for bodies from 1 KiB to 1 MiB. A pool variant takes every buffer from a size-class
// pool (Options.Pool), as the ext_proc server does.
func BenchmarkRead(b *testing.B) {
	budget := body.NewBudget(1 << 30)
	pool := &syncPool{}
	for _, size := range benchSizes {
		data := bytes.Repeat([]byte("x"), size)
		b.Run(fmt.Sprintf("declared/%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := readDeclared(&wire{data: data}, int64(size), 32<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("exact/%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := readExact(&wire{data: data}, int64(size)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("budget/%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				buf, err := body.Read(&wire{data: data}, body.Options{Limit: 32 << 20, Declared: int64(size), Budget: budget})
				if err != nil {
					b.Fatal(err)
				}
				buf.Release()
			}
		})
		b.Run(fmt.Sprintf("pool/%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				buf, err := body.Read(
					&wire{data: data},
					body.Options{Limit: 32 << 20, Declared: int64(size), Budget: budget, Pool: pool},
				)
				if err != nil {
					b.Fatal(err)
				}
				buf.Release()
			}
		})
	}
}

// BenchmarkBudgetParallel measures the budget's reserve and release under contention.
func BenchmarkBudgetParallel(b *testing.B) {
	budget := body.NewBudget(1 << 40)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := budget.Reserve(4096); err != nil {
				b.Fatal(err)
			}
			budget.Release(4096)
		}
	})
}

// syncPool is a power-of-two size-class pool over sync.Pool, from 4 KiB to 4 MiB.
type syncPool struct{ classes [11]sync.Pool }

func (p *syncPool) class(n int) int {
	c := 0
	for size := body.FirstSize; size < n; size *= 2 {
		c++
	}
	return c
}

func (p *syncPool) Get(n int) *[]byte {
	c := p.class(n)
	if c >= len(p.classes) {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.classes[c].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, body.FirstSize<<c)
	return &b
}

func (p *syncPool) Put(b *[]byte) {
	if c := p.class(cap(*b)); c < len(p.classes) && cap(*b) == body.FirstSize<<c {
		p.classes[c].Put(b)
	}
}
