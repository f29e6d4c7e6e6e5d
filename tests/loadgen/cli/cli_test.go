package cli

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/loadgentest"
	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
)

func TestParseFlagsAndEnvironment(t *testing.T) {
	env := map[string]string{
		"SWITCHYARD_TARGET":        "rr=http://127.0.0.1:1 sy=http://127.0.0.1:2",
		"SWITCHYARD_WORKLOAD":      "bursty",
		"SWITCHYARD_MAX_IN_FLIGHT": "7",
		"SWITCHYARD_RATE":          "3.5",
	}
	o, err := parse(
		[]string{"--workload=mixed-fleet", "--duration=5s"},
		func(k string) string { return env[k] },
		&bytes.Buffer{},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"rr=http://127.0.0.1:1", "sy=http://127.0.0.1:2"}
	if !reflect.DeepEqual(o.Targets, want) || o.Workload != "mixed-fleet" || o.MaxInFlight != 7 || o.Rate != 3.5 ||
		o.Duration != 5*time.Second {
		t.Fatalf("options %+v", o)
	}
	o, err = parse([]string{"--target=a=http://127.0.0.1:3"}, func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil || !reflect.DeepEqual(o.Targets, []string{"a=http://127.0.0.1:3"}) {
		t.Fatalf("flag must win over environment: %v %v", o.Targets, err)
	}
	if _, err := parse(
		nil,
		func(k string) string { return map[string]string{"SWITCHYARD_RATE": "fast"}[k] },
		&bytes.Buffer{},
	); err == nil ||
		!strings.Contains(err.Error(), "SWITCHYARD_RATE") {
		t.Fatalf("bad environment value: %v", err)
	}
}

func TestMainExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"--help"}, 0, "Usage: loadgen"},
		{"unknown flag", []string{"--nope=1"}, 2, "flag provided but not defined"},
		{"stray argument", []string{"run"}, 2, "unexpected argument"},
		{"no workload", []string{"--target=http://127.0.0.1:1"}, 1, "--workload: required"},
		{"unknown workload", []string{"--target=http://127.0.0.1:1", "--workload=nope"}, 1, "unknown workload"},
		{"no target", []string{"--workload=bursty"}, 1, "--target: at least one"},
		{"bad target", []string{"--workload=bursty", "--target=x=ftp://h"}, 1, "bad URL"},
		{
			"rate and capacity",
			[]string{"--workload=bursty", "--target=http://127.0.0.1:1", "--rate=1", "--capacity=2"},
			1,
			"not both",
		},
		{"bad rate", []string{"--workload=bursty", "--target=http://127.0.0.1:1", "--rate=-1"}, 1, "rate: must be > 0"},
		{
			"adapter count",
			[]string{"--workload=multi-lora", "--target=http://127.0.0.1:1", "--adapters=a,b"},
			1,
			"9 adapters, 2 names",
		},
		{
			"missing baseline",
			[]string{"--workload=bursty", "--target=http://127.0.0.1:1", "--duration=1ms", "--baseline=oracle"},
			1,
			"baseline",
		},
		{
			"bad log format",
			[]string{"--workload=bursty", "--target=http://127.0.0.1:1", "--log-format=xml"},
			1,
			"--log-format",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Main(context.Background(), tt.args, &out, &errOut)
			if code != tt.code || !strings.Contains(errOut.String(), tt.want) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, tt.code, errOut.String(), tt.want)
			}
		})
	}
}

func TestListWorkloads(t *testing.T) {
	var out bytes.Buffer
	if code := Main(context.Background(), []string{"--list-workloads"}, &out, &bytes.Buffer{}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, name := range []string{"mixed-fleet", "bursty", "shared-prefix", "multi-lora", "uniform-steady", "region-burst", "region-burst-overload", "cluster-loss"} {
		if !strings.Contains(out.String(), name) {
			t.Errorf("list lacks %s", name)
		}
	}
}

func TestRunWritesEveryReport(t *testing.T) {
	rr := (&loadgentest.Server{Tokens: 3, TTFT: 150 * time.Millisecond}).Start(t)
	sy := (&loadgentest.Server{Tokens: 3, Headers: map[string]string{"x-switchyard-cluster": "c1"}}).Start(t)
	dir := t.TempDir()
	out, md, plot := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.md"), filepath.Join(dir, "ttft.png")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{
		"--target=round-robin=" + rr, "--target=switchyard=" + sy, "--workload=mixed-fleet",
		"--duration=400ms", "--rate=20", "--seed=77", "--model=m1", "--progress",
		"--out=" + out, "--markdown=" + md, "--plot=" + plot,
	}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	rep := readReport(t, out)
	if rep.Seed != 77 || rep.Baseline != "round-robin" || len(rep.Targets) != 2 || rep.Targets[1].ClusterShare["c1"] != 1 {
		t.Fatalf("report %+v", rep)
	}
	if n := rep.Targets[0].Requests; n == 0 || n != rep.Targets[1].Requests || rep.Targets[0].Errors != 0 {
		t.Fatalf("requests %d / %d, errors %d", n, rep.Targets[1].Requests, rep.Targets[0].Errors)
	}
	if r := rep.Targets[1].Ratios["ttft_p50"]; !(r < 1) {
		t.Errorf("switchyard TTFT P50 ratio %v, want < 1 (round-robin waits 150ms)", r)
	}
	mdText, err := os.ReadFile(md)
	if err != nil || !strings.Contains(string(mdText), "| switchyard |") ||
		!strings.Contains(stdout.String(), "| round-robin |") {
		t.Fatalf("markdown file %q (%v), stdout %q", mdText, err, stdout.String())
	}
	pf, err := os.Open(plot)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if _, err := png.DecodeConfig(pf); err != nil {
		t.Fatalf("plot: %v", err)
	}
}

// readReport reads the JSON report Main wrote to path.
func readReport(t *testing.T, path string) *report.Report {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := report.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
