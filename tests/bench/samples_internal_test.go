package bench

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
)

// The samples file is CSV that a standard reader parses into the header's columns, with names
// holding commas and quotes kept whole and a failed request's TTFT left empty.
func TestWriteSamples(t *testing.T) {
	lres := &loadgen.Result{Targets: []loadgen.TargetResult{{
		Name: "global",
		Samples: []loadgen.Sample{
			{Index: 3, Region: "us-east-1", Scheduled: 1500 * time.Millisecond, Sent: 1501 * time.Millisecond,
				TTFT: 250 * time.Millisecond, E2E: 2 * time.Second, PromptTokens: 1000, OutputTokens: 200,
				Status: 200, Cluster: `odd,"name"`, ServedRegion: "us-west-2", Route: "overflow", Endpoint: "127.0.0.1:1"},
			{Index: 4, Region: "us-east-1", Status: 429, Error: loadgen.ErrorKind("status")},
		},
	}}}
	path := filepath.Join(t.TempDir(), "s.csv")
	if err := writeSamples(path, lres); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	header := strings.Split(samplesHeader, ",")
	if len(rows) != 3 || strings.Join(rows[0], ",") != samplesHeader {
		t.Fatalf("rows %q", rows)
	}
	col := func(row []string, name string) string {
		for i, h := range header {
			if h == name {
				return row[i]
			}
		}
		t.Fatalf("no column %s", name)
		return ""
	}
	for _, c := range []struct {
		row        int
		name, want string
	}{
		{1, "ttft_ms", "250.000"}, {1, "sent_ms", "1501.000"}, {1, "cluster", `odd,"name"`},
		{1, "route", "overflow"}, {1, "prompt_tokens", "1000"}, {2, "ttft_ms", ""}, {2, "status", "429"},
		{2, "error", "status"},
	} {
		if got := col(rows[c.row], c.name); got != c.want {
			t.Errorf("row %d %s = %q, want %q", c.row, c.name, got, c.want)
		}
	}
}
