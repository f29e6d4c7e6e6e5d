package trace_test

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/trace"
)

// readAll reads every record of src in format f; err is the first error other than io.EOF.
func readAll(t testing.TB, f trace.Format, src string) ([]trace.Record, error) {
	t.Helper()
	r, err := trace.NewReader(f, strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	var out []trace.Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			if _, again := r.Next(); !errors.Is(again, err) {
				t.Errorf("error not sticky: %v, then %v", err, again)
			}
			return out, err
		}
		out = append(out, rec)
	}
}

func TestMooncake(t *testing.T) {
	long := `{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [0], "pad": "` +
		strings.Repeat("x", trace.MaxLineBytes) + `"}`
	tests := []struct {
		name    string
		src     string
		want    []trace.Record
		wantErr string // substring; "" = no error
	}{
		{name: "good", src: `{"timestamp": 0, "input_length": 1200, "output_length": 40, "hash_ids": [0, 1, 2]}
{"timestamp": 250.5, "input_length": 512, "output_length": 0, "hash_ids": [0], "extra": true}

{"timestamp": 250.5, "input_length": 513, "output_length": 3, "hash_ids": [7, 8]}
`, want: []trace.Record{
			{Line: 1, At: 0, InputTokens: 1200, OutputTokens: 40, HashIDs: []uint64{0, 1, 2}},
			{Line: 2, At: 250500 * time.Microsecond, InputTokens: 512, OutputTokens: 0, HashIDs: []uint64{0}},
			{Line: 4, At: 250500 * time.Microsecond, InputTokens: 513, OutputTokens: 3, HashIDs: []uint64{7, 8}},
		}},
		{
			name: "no final newline, CRLF",
			src: "{\"timestamp\": 3, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [5]}\r\n" +
				`{"timestamp": 4, "input_length": 1, "output_length": 1, "hash_ids": [6]}`,
			want: []trace.Record{
				{Line: 1, At: 3 * time.Millisecond, InputTokens: 1, OutputTokens: 1, HashIDs: []uint64{5}},
				{Line: 2, At: 4 * time.Millisecond, InputTokens: 1, OutputTokens: 1, HashIDs: []uint64{6}},
			},
		},
		{name: "empty file", src: ""},
		{
			name:    "missing timestamp",
			src:     `{"input_length": 1, "output_length": 1, "hash_ids": [0]}`,
			wantErr: "line 1: timestamp: missing",
		},
		{
			name:    "missing input_length",
			src:     `{"timestamp": 1, "output_length": 1, "hash_ids": [0]}`,
			wantErr: "line 1: input_length: missing",
		},
		{
			name:    "missing output_length",
			src:     `{"timestamp": 1, "input_length": 1, "hash_ids": [0]}`,
			wantErr: "line 1: output_length: missing",
		},
		{
			name:    "missing hash_ids",
			src:     `{"timestamp": 1, "input_length": 1, "output_length": 1}`,
			wantErr: "line 1: hash_ids: missing",
		},
		{
			name:    "null field",
			src:     `{"timestamp": null, "input_length": 1, "output_length": 1, "hash_ids": [0]}`,
			wantErr: "timestamp: missing",
		},
		{name: "bad row after good", src: `{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [0]}
{"timestamp": 2, "input_length": "many", "output_length": 1, "hash_ids": [0]}`,
			want:    []trace.Record{{Line: 1, At: time.Millisecond, InputTokens: 1, OutputTokens: 1, HashIDs: []uint64{0}}},
			wantErr: "line 2: not a JSON object"},
		{name: "not JSON", src: "timestamp,input\n", wantErr: "line 1: not a JSON object"},
		{
			name:    "two values",
			src:     `{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [0]} {}`,
			wantErr: "more than one JSON value",
		},
		{
			name:    "negative timestamp",
			src:     `{"timestamp": -1, "input_length": 1, "output_length": 1, "hash_ids": [0]}`,
			wantErr: "timestamp: -1 ms is outside",
		},
		{
			name:    "huge timestamp",
			src:     `{"timestamp": 1e18, "input_length": 1, "output_length": 1, "hash_ids": [0]}`,
			wantErr: "timestamp: 1e+18 ms is outside",
		},
		{
			name:    "zero input",
			src:     `{"timestamp": 1, "input_length": 0, "output_length": 1, "hash_ids": []}`,
			wantErr: "input_length: 0 is outside",
		},
		{
			name:    "huge input",
			src:     `{"timestamp": 1, "input_length": 2000000, "output_length": 1, "hash_ids": [0]}`,
			wantErr: "input_length: 2000000 is outside",
		},
		{
			name:    "negative output",
			src:     `{"timestamp": 1, "input_length": 1, "output_length": -2, "hash_ids": [0]}`,
			wantErr: "output_length: -2 is outside",
		},
		{
			name:    "negative id",
			src:     `{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [-1]}`,
			wantErr: "not a JSON object",
		},
		{name: "too few blocks", src: `{"timestamp": 1, "input_length": 1025, "output_length": 1, "hash_ids": [0, 1]}`,
			wantErr: "hash_ids: 2 blocks for input_length 1025 (want 3 blocks of 512 tokens)"},
		{name: "too many blocks", src: `{"timestamp": 1, "input_length": 512, "output_length": 1, "hash_ids": [0, 1]}`,
			wantErr: "hash_ids: 2 blocks for input_length 512 (want 1"},
		{name: "out of order", src: `{"timestamp": 10, "input_length": 1, "output_length": 1, "hash_ids": [0]}
{"timestamp": 9, "input_length": 1, "output_length": 1, "hash_ids": [0]}`,
			want:    []trace.Record{{Line: 1, At: 10 * time.Millisecond, InputTokens: 1, OutputTokens: 1, HashIDs: []uint64{0}}},
			wantErr: "line 2: timestamp: 9 ms is before the previous record's 10 ms"},
		{
			name:    "huge line",
			src:     `{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [0]}` + "\n" + long + "\n",
			want:    []trace.Record{{Line: 1, At: time.Millisecond, InputTokens: 1, OutputTokens: 1, HashIDs: []uint64{0}}},
			wantErr: "line 2: line longer than",
		},
		{name: "huge last line without newline", src: long, wantErr: "line 1: line longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(t, trace.Mooncake, tc.src)
			checkErr(t, err, tc.wantErr)
			checkRecords(t, got, tc.want)
		})
	}
}

func TestAzure(t *testing.T) {
	const header = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	tests := []struct {
		name    string
		src     string
		want    []trace.Record
		wantErr string
	}{
		{name: "good", src: "\ufeff" + header + `2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,0

2023-11-16 18:15:50.9951690,1,16
`, want: []trace.Record{
			{Line: 2, At: 0, InputTokens: 374, OutputTokens: 44},
			{Line: 3, At: 4314579 * time.Microsecond, InputTokens: 396, OutputTokens: 0},
			{Line: 5, At: 4314579 * time.Microsecond, InputTokens: 1, OutputTokens: 16},
		}},
		{
			name: "columns in another order, extra column, CRLF, RFC 3339",
			src:  "GeneratedTokens,Model,TIMESTAMP,ContextTokens\r\n7,x,2024-05-10T00:00:00Z,100\r\n8,y,2024-05-10T00:00:01.5Z,200",
			want: []trace.Record{
				{Line: 2, At: 0, InputTokens: 100, OutputTokens: 7},
				{Line: 3, At: 1500 * time.Millisecond, InputTokens: 200, OutputTokens: 8},
			},
		},
		{name: "header only", src: header},
		{name: "empty file", src: "", wantErr: "empty file: no header"},
		{
			name:    "missing column",
			src:     "TIMESTAMP,ContextTokens\n2023-11-16 18:15:46,1\n",
			wantErr: "line 1: header \"TIMESTAMP,ContextTokens\" lacks column GeneratedTokens",
		},
		{
			name:    "no header",
			src:     "2023-11-16 18:15:46.6805900,374,44\n",
			wantErr: "line 1: header \"2023-11-16 18:15:46.6805900,374,44\" lacks column TIMESTAMP",
		},
		{
			name:    "missing field",
			src:     header + "2023-11-16 18:15:46.6805900,374\n",
			wantErr: "line 2: 2 fields, the header has 3",
		},
		{
			name:    "empty count",
			src:     header + "2023-11-16 18:15:46.6805900,,5\n",
			wantErr: `line 2: ContextTokens: "" is not a whole number`,
		},
		{
			name:    "bad count after good",
			src:     header + "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:47.0000000,374,4.5\n",
			want:    []trace.Record{{Line: 2, At: 0, InputTokens: 374, OutputTokens: 44}},
			wantErr: `line 3: GeneratedTokens: "4.5" is not a whole number`,
		},
		{name: "bad time", src: header + "yesterday,374,44\n", wantErr: `line 2: TIMESTAMP: "yesterday" is not a time`},
		{
			name:    "zero context",
			src:     header + "2023-11-16 18:15:46.6805900,0,44\n",
			wantErr: "line 2: ContextTokens: 0 is outside [1,",
		},
		{
			name:    "negative generated",
			src:     header + "2023-11-16 18:15:46.6805900,3,-1\n",
			wantErr: "line 2: GeneratedTokens: -1 is outside [0,",
		},
		{name: "out of order", src: header + "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:46.0000000,374,44\n",
			want:    []trace.Record{{Line: 2, At: 0, InputTokens: 374, OutputTokens: 44}},
			wantErr: "line 3: TIMESTAMP: 2023-11-16 18:15:46.0000000 is before the previous row's"},
		{name: "span too long", src: header + "2023-11-16 18:15:46,1,1\n2024-11-16 18:15:46,1,1\n",
			want:    []trace.Record{{Line: 2, At: 0, InputTokens: 1, OutputTokens: 1}},
			wantErr: "line 3: TIMESTAMP: 2024-11-16 18:15:46 is more than"},
		{
			name:    "huge line",
			src:     header + strings.Repeat("9", trace.MaxLineBytes+5) + "\n",
			wantErr: "line 2: line longer than",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(t, trace.Azure, tc.src)
			checkErr(t, err, tc.wantErr)
			checkRecords(t, got, tc.want)
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("error %v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q, want it to contain %q", err, want)
	case want != "":
		var le *trace.LineError
		if !errors.As(err, &le) || le.Line < 1 {
			t.Errorf("error %v is not a LineError with a line number", err)
		}
	}
}

func checkRecords(t *testing.T, got, want []trace.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records %+v, want %d", len(got), got, len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Line != w.Line || g.At != w.At || g.InputTokens != w.InputTokens || g.OutputTokens != w.OutputTokens ||
			len(g.HashIDs) != len(w.HashIDs) {
			t.Errorf("record %d: got %+v, want %+v", i, g, w)
			continue
		}
		for j := range g.HashIDs {
			if g.HashIDs[j] != w.HashIDs[j] {
				t.Errorf("record %d: hash ids %v, want %v", i, g.HashIDs, w.HashIDs)
				break
			}
		}
	}
}

// TestTestdata reads the package's synthetic traces whole (the workload tests build on them).
func TestTestdata(t *testing.T) {
	for _, tc := range []struct {
		f    trace.Format
		file string
		n    int
		last time.Duration
	}{
		{trace.Mooncake, "mooncake.jsonl", 8, 2100 * time.Millisecond},
		{trace.Azure, "azure.csv", 8, 2300 * time.Millisecond},
	} {
		t.Run(string(tc.f), func(t *testing.T) {
			f, err := trace.Open(tc.f, filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var recs []trace.Record
			for {
				rec, err := f.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, rec)
			}
			if len(recs) != tc.n || recs[len(recs)-1].At != tc.last {
				t.Errorf("%d records, last at %v; want %d, %v", len(recs), recs[len(recs)-1].At, tc.n, tc.last)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	if _, err := trace.Open(trace.Mooncake, filepath.Join(t.TempDir(), "absent.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := trace.Open("parquet", "x"); !errors.Is(err, trace.ErrFormat) {
		t.Errorf("unknown format: %v, want ErrFormat", err)
	}
	if _, err := trace.NewReader("parquet", strings.NewReader("")); !errors.Is(err, trace.ErrFormat) {
		t.Errorf("unknown format: %v, want ErrFormat", err)
	}
	if !strings.Contains(trace.Azure.Attribution(), "Splitwise") ||
		!strings.Contains(trace.Azure.Attribution(), "CC-BY 4.0") {
		t.Errorf("Azure attribution %q lacks the citation", trace.Azure.Attribution())
	}
}
