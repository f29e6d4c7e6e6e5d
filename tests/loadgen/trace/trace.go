// Package trace reads recorded LLM request traces for replay: the Mooncake JSONL format (arrival
// in ms, prompt and output lengths, and the prompt as a chain of 512-token block hashes) and the
// Azure LLM inference CSV format (timestamp, context and generated tokens).
//
// Readers stream: they hold one line at a time (at most MaxLineBytes), never the whole file, and
// every error names the line it was found on. Records come out in file order, which must be
// arrival order.
package trace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Format names a trace file format.
type Format string

// The formats a Reader reads.
const (
	// Mooncake is kvcache-ai/Mooncake's JSONL: one object a line with timestamp (ms from the
	// start), input_length, output_length and hash_ids (one id per 512-token prompt block; equal
	// leading ids are equal prefixes).
	Mooncake Format = "mooncake"
	// Azure is the Azure LLM inference trace CSV: a header, then TIMESTAMP (UTC date and time),
	// ContextTokens and GeneratedTokens per row. It has no prompt content and no prefix information.
	Azure Format = "azure"
)

// Formats lists the formats, for messages.
var Formats = []Format{Mooncake, Azure}

// BlockTokens is the prompt length one Mooncake hash id stands for.
const BlockTokens = 512

// Limits on what a trace line may hold. Lines longer than MaxLineBytes are an error, so a file
// without newlines cannot make a reader buffer it whole.
const (
	MaxLineBytes = 1 << 20
	// MaxTokens bounds a record's input and output lengths (the load generator's own bound).
	MaxTokens = 1 << 20
	// MaxTimestamp bounds arrival times (about 11.5 days), keeping durations far from overflow.
	MaxTimestamp = 1_000_000 * time.Second
)

// AzureAttribution is the citation the Azure trace's licence (CC-BY 4.0) asks for wherever results
// from it are published.
const AzureAttribution = "Azure LLM inference trace 2023 (Azure Public Dataset, CC-BY 4.0): " +
	"Patel et al., \"Splitwise: Efficient Generative LLM Inference Using Phase Splitting\", ISCA 2024"

// MooncakeAttribution names the Mooncake trace's source (Apache-2.0).
const MooncakeAttribution = "Mooncake conversation trace (kvcache-ai/Mooncake, Apache-2.0): " +
	"Qin et al., \"Mooncake: Trading More Storage for Less Computation\", FAST 2025"

// Attribution returns the citation for results from a trace of format f.
func (f Format) Attribution() string {
	switch f {
	case Azure:
		return AzureAttribution
	case Mooncake:
		return MooncakeAttribution
	}
	return ""
}

// Validate reports whether f is a known format.
func (f Format) Validate() error {
	switch f {
	case Mooncake, Azure:
		return nil
	}
	return fmt.Errorf("%w %q (want mooncake or azure)", ErrFormat, string(f))
}

// ErrFormat is returned for an unknown format name.
var ErrFormat = errors.New("trace: unknown format")

// Record is one request of a trace.
type Record struct {
	// Line is the record's line number in the file, from 1.
	Line int
	// At is the arrival time from the start of the trace: Mooncake's timestamp, or an Azure
	// timestamp minus the first row's.
	At time.Duration
	// InputTokens and OutputTokens are the prompt and output lengths.
	InputTokens, OutputTokens int
	// HashIDs are the prompt's 512-token blocks (Mooncake; nil for Azure): the last block holds
	// InputTokens − 512·(len−1) tokens.
	HashIDs []uint64
}

// Reader yields a trace's records in file order. It is not safe for concurrent use.
type Reader interface {
	// Next returns the next record, or io.EOF after the last one. Any other error names the line
	// and ends the reading: later calls return it again.
	Next() (Record, error)
}

// NewReader returns a reader of format f over r.
func NewReader(f Format, r io.Reader) (Reader, error) {
	switch f {
	case Mooncake:
		return newMooncakeReader(r), nil
	case Azure:
		return newAzureReader(r), nil
	}
	return nil, f.Validate()
}

// File is a Reader over an open file; Close closes it.
type File struct {
	Reader
	f *os.File
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// Open opens the trace file at path for reading in format f. A missing file is an error that
// wraps fs.ErrNotExist.
func Open(f Format, path string) (*File, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: open: %w", err)
	}
	r, err := NewReader(f, fh)
	if err != nil {
		fh.Close()
		return nil, err
	}
	return &File{Reader: r, f: fh}, nil
}
