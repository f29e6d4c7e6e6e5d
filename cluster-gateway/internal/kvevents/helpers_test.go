package kvevents

import (
	"bytes"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// ev is an event to encode the way vLLM's msgspec does: a tagged array, tag first.
type ev struct {
	tag       string
	hashes    []any // uint64 or []byte
	parent    any   // nil, uint64 or []byte
	tokens    int
	blockSize int
	trailing  []any // lora_id, medium, lora_name, ...
}

func stored(hashes ...uint64) ev {
	hs := make([]any, len(hashes))
	for i, h := range hashes {
		hs[i] = h
	}
	return ev{tag: tagStored, hashes: hs, tokens: 16 * len(hashes), blockSize: 16, trailing: []any{nil, "GPU"}}
}

func removed(hashes ...uint64) ev {
	hs := make([]any, len(hashes))
	for i, h := range hashes {
		hs[i] = h
	}
	return ev{tag: tagRemoved, hashes: hs, trailing: []any{"GPU"}}
}

func encodeBatch(tb testing.TB, rank any, evs ...ev) []byte {
	tb.Helper()
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	n := 2
	if rank != nil {
		n = 3
	}
	must(e.EncodeArrayLen(n))
	must(e.EncodeFloat64(1.7e9))
	must(e.EncodeArrayLen(len(evs)))
	for _, x := range evs {
		encodeEvent(tb, e, x)
	}
	if rank != nil {
		must(e.Encode(rank))
	}
	return buf.Bytes()
}

func encodeEvent(tb testing.TB, e *msgpack.Encoder, x ev) {
	tb.Helper()
	var fields []any
	switch x.tag {
	case tagStored:
		toks := make([]int, x.tokens)
		for i := range toks {
			toks[i] = 1000 + i
		}
		fields = []any{x.hashes, x.parent, toks, x.blockSize}
	case tagRemoved:
		fields = []any{x.hashes}
	}
	fields = append(fields, x.trailing...)
	if err := e.EncodeArrayLen(1 + len(fields)); err != nil {
		tb.Fatal(err)
	}
	if err := e.EncodeString(x.tag); err != nil {
		tb.Fatal(err)
	}
	for _, f := range fields {
		if err := e.Encode(f); err != nil {
			tb.Fatal(err)
		}
	}
}

func testLimits() Limits { return Limits{MaxEvents: 64, MaxHashes: 64} }
