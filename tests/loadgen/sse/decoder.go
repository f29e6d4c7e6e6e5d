package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ChunkDecoder decodes the chunks of one stream like ParseChunk, reusing its JSON scanner and
// buffers from one chunk to the next so that a content chunk decodes without allocating. It is not safe
// for concurrent use; use one per stream.
type ChunkDecoder struct {
	feed bytes.Reader
	dec  *json.Decoder
	w    wireChunk // reused, with its choices, zeroed before each chunk
}

// errTrailing reports bytes after the chunk's JSON value, which ParseChunk also rejects.
var errTrailing = errors.New("sse: chunk: data after the JSON value")

// Decode decodes one event's data.
func (d *ChunkDecoder) Decode(data []byte) (Chunk, error) {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, Done) {
		return Chunk{Done: true}, nil
	}
	if d.dec == nil {
		d.dec = json.NewDecoder(&d.feed)
	}
	d.feed.Reset(data)
	start := d.dec.InputOffset()
	choices := d.w.Choices[:cap(d.w.Choices)]
	clear(choices) // encoding/json decodes into old slice elements without zeroing them
	d.w = wireChunk{Choices: choices[:0]}
	if err := d.dec.Decode(&d.w); err != nil {
		d.dec = nil // a failed decoder keeps its error
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Chunk{}, fmt.Errorf("sse: chunk: %w", err)
	}
	if d.dec.InputOffset()-start != int64(len(data)) {
		d.dec = nil
		return Chunk{}, errTrailing
	}
	return d.w.chunk(), nil
}
