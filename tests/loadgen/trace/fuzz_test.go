package trace_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/loadgen/trace"
)

// fuzzReader checks what a reader yields from arbitrary bytes: records in order with sane
// fields, then io.EOF or a LineError naming a line at or after the last record's.
func fuzzReader(t *testing.T, f trace.Format, data []byte) {
	r, err := trace.NewReader(f, strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	var last trace.Record
	for n := 0; ; n++ {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			var le *trace.LineError
			if !errors.As(err, &le) || le.Line < 1 || le.Line < last.Line || le.Format != f {
				t.Fatalf("error %v: not a LineError after line %d", err, last.Line)
			}
			return
		}
		switch {
		case rec.Line <= last.Line && n > 0, rec.At < last.At, rec.At < 0, rec.At > trace.MaxTimestamp:
			t.Fatalf("record %+v after %+v: out of order", rec, last)
		case rec.InputTokens < 1 || rec.InputTokens > trace.MaxTokens,
			rec.OutputTokens < 0 || rec.OutputTokens > trace.MaxTokens:
			t.Fatalf("record %+v: lengths out of range", rec)
		case f == trace.Mooncake && len(rec.HashIDs) != (rec.InputTokens+trace.BlockTokens-1)/trace.BlockTokens:
			t.Fatalf("record %+v: %d blocks", rec, len(rec.HashIDs))
		case f == trace.Azure && rec.HashIDs != nil:
			t.Fatalf("azure record with hash ids: %+v", rec)
		}
		last = rec
	}
}

func seed(f *testing.F, file string) {
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

func FuzzMooncake(f *testing.F) {
	seed(f, "mooncake.jsonl")
	f.Add([]byte(`{"timestamp": 1, "input_length": 1025, "output_length": 1, "hash_ids": [0, 1]}`))
	f.Add(
		[]byte("{\"timestamp\": 10, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [0]}\n{\"timestamp\": 9}\n"),
	)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzReader(t, trace.Mooncake, data) })
}

func FuzzAzure(f *testing.F) {
	seed(f, "azure.csv")
	f.Add([]byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374\n"))
	f.Add([]byte("GeneratedTokens,TIMESTAMP,ContextTokens\r\n1,2024-05-10T00:00:00Z,3\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzReader(t, trace.Azure, data) })
}
