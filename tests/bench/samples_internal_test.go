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

// ReadSamples reads back what writeSamples wrote, and names the line and column of what it
// cannot read.
func TestReadSamples(t *testing.T) {
	want := []loadgen.Sample{
		{Index: 3, Region: "us-east-1", Scheduled: 1500 * time.Millisecond, Sent: 1501250 * time.Microsecond,
			TTFT: 250 * time.Millisecond, E2E: 2 * time.Second, PromptTokens: 1000, CachedTokens: 64, OutputTokens: 200,
			Status: 200, Cluster: `odd,"name"`, ServedRegion: "us-west-2", Route: "overflow", Endpoint: "127.0.0.1:1"},
		{Index: 4, Region: "us-east-1", Sent: time.Second, Status: 429, Error: loadgen.ErrorKind("status")},
	}
	path := filepath.Join(t.TempDir(), "s.csv")
	if err := writeSamples(
		path,
		&loadgen.Result{Targets: []loadgen.TargetResult{{Name: "global", Samples: want}}},
	); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadSamples(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d samples, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Target != "global" || g.Index != w.Index || g.ClientRegion != w.Region || g.Scheduled != w.Scheduled ||
			g.Sent != w.Sent || g.TTFT != w.TTFT || g.OK != w.OK() || g.E2E != w.E2E || g.PromptTokens != w.PromptTokens ||
			g.CachedTokens != w.CachedTokens || g.OutputTokens != w.OutputTokens || g.Status != w.Status ||
			g.Error != string(w.Error) || g.Cluster != w.Cluster || g.ServedRegion != w.ServedRegion ||
			g.Route != w.Route || g.Endpoint != w.Endpoint {
			t.Errorf("sample %d: read %+v, wrote %+v", i, g, w)
		}
	}

	row := "global,1,us-east-1,1.000,2.000,3.000,4.000,10,0,5,200,,c,r,local,e"
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "", "reading the header"},
		{"other header", "target,index\n", "header"},
		{"short row", samplesHeader + "\nglobal,1\n", "wrong number of fields"},
		{"bad index", samplesHeader + "\n" + row + "\n" + strings.Replace(row, ",1,", ",one,", 1) + "\n", "line 3: column index"},
		{"bad time", samplesHeader + "\n" + strings.Replace(row, "2.000", "NaN", 1) + "\n", "line 2: column sent_ms"},
		{"negative time", samplesHeader + "\n" + strings.Replace(row, "3.000", "-3", 1) + "\n", "column ttft_ms"},
		{"bad status", samplesHeader + "\n" + strings.Replace(row, ",200,", ",ok,", 1) + "\n", "column status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadSamples(strings.NewReader(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if got, err := ReadSamples(
		strings.NewReader(samplesHeader + "\n" + row + "\n"),
	); err != nil || len(got) != 1 || !got[0].OK ||
		got[0].TTFT != 3*time.Millisecond {
		t.Fatalf("one row: %+v, %v", got, err)
	}
}
