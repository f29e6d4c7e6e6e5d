package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRunFlags(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"bad fleet", []string{"--fleet=h100x0"}, 2, "positive integer"},
		{"unknown profile", []string{"--fleet=v100x2"}, 2, "v100"},
		{"rate and capacity", []string{"--rate=5", "--capacity=10"}, 2, "exclusive"},
		{"unknown workload", []string{"--workload=nope"}, 2, "unknown workload"},
		{"bad baseline", []string{"--baseline=random"}, 2, "round-robin, local-oracle or none"},
		{"local oracle without regions", []string{"--baseline=local-oracle"}, 2, "needs --regions"},
		{"rtt without regions", []string{"--rtt=a/b=1ms"}, 2, "--rtt needs --regions"},
		{
			"regions miscounted",
			[]string{"--workload=region-burst", "--fleet=l40sx3", "--regions=us-east-1=2"},
			2,
			"places 2 pods, the fleet has 3",
		},
		{
			"region count not a number",
			[]string{"--workload=region-burst", "--fleet=l40s", "--regions=us-east-1=one"},
			2,
			"REGION=PODS",
		},
		{"region twice", []string{"--workload=region-burst", "--fleet=l40sx2", "--regions=a=1,a=1"}, 2, "named twice"},
		{
			"rtt pair missing",
			[]string{"--workload=region-burst", "--fleet=l40sx3", "--regions=us-east-1=1,us-west-2=1,eu-west-1=1",
				"--rtt=us-east-1/us-west-2=70ms,us-east-1/eu-west-1=80ms"},
			2,
			"no round trip between us-west-2 and eu-west-1",
		},
		{"rtt unknown region", []string{"--workload=region-burst", "--fleet=l40sx2", "--regions=us-east-1=1,us-west-2=1",
			"--rtt=us-east-1/mars=70ms"}, 2, "region mars"},
		{"rtt bad duration", []string{"--workload=region-burst", "--fleet=l40sx2", "--regions=us-east-1=1,us-west-2=1",
			"--rtt=us-east-1/us-west-2=soon"}, 2, "REGION/REGION=DURATION"},
		{"rtt within a region", []string{"--workload=region-burst", "--fleet=l40sx2", "--regions=us-east-1=1,us-west-2=1",
			"--rtt=us-east-1/us-east-1=1ms,us-east-1/us-west-2=70ms"}, 2, "with itself"},
		{
			"client region without pods",
			[]string{"--workload=region-burst", "--fleet=l40sx2", "--regions=us-east-1=1,us-west-2=1",
				"--rtt=us-east-1/us-west-2=70ms"},
			2,
			`region "eu-west-1", which has no pods`,
		},
		{"adapters without slots", []string{"--workload=multi-lora", "--fleet=h100"}, 2, "--max-loras"},
		{"stray argument", []string{"extra"}, 2, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tt.args, &stdout, &stderr); code != tt.wantCode {
				t.Fatalf("exit code %d, want %d (stderr %q)", code, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Fatalf("stderr %q does not mention %q", stderr.String(), tt.wantErr)
			}
		})
	}
}

// runJSON runs the command with args and --json, checks that it succeeds and prints every wanted
// string, and returns the JSON report.
func runJSON(t *testing.T, args []string, wants ...string) *output {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out.json")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), append(args, "--json="+path), &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	for _, want := range wants {
		if !strings.Contains(stdout.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out output
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func TestRunWritesReports(t *testing.T) {
	args := []string{"--workload=mixed-fleet", "--fleet=h100,a10gx2", "--duration=3s", "--rate=6"}
	out := runJSON(t, args, "| oracle |", "| round-robin |", "oracle / round-robin TTFT", "| 2 | a10g |")
	if len(out.Policies) != 2 || out.Rate != 6 || len(out.Fleet) != 3 ||
		len(out.Policies[0].Report.Requests) != out.Policies[0].Summary.Requests || out.Policies[0].Summary.Requests < 5 {
		t.Fatalf("json report: %d policies, rate %v, fleet %v", len(out.Policies), out.Rate, out.Fleet)
	}
}

func TestRunRegions(t *testing.T) {
	args := []string{"--workload=region-burst", "--fleet=l40sx6", "--duration=8s", "--capacity=25.5",
		"--regions=us-east-1=2,us-west-2=2,eu-west-1=2",
		"--rtt=us-east-1/us-west-2=70ms,us-east-1/eu-west-1=80ms,us-west-2/eu-west-1=140ms",
		"--baseline=local-oracle"}
	out := runJSON(
		t,
		args,
		"| oracle | us-east-1 |",
		"| local-oracle | eu-west-1 |",
		"oracle / local-oracle TTFT in us-east-1",
	)
	if len(out.PodRegions) != 6 || out.PodRegions[2] != "us-west-2" {
		t.Fatalf("pod regions %v", out.PodRegions)
	}
	// The burst region's clients overflow under the oracle and never under its local baseline;
	// every request's time includes the round trip to where it went.
	rtt := map[[2]string]time.Duration{
		{"us-east-1", "us-west-2"}: 70 * time.Millisecond,
		{"us-east-1", "eu-west-1"}: 80 * time.Millisecond,
		{"us-west-2", "eu-west-1"}: 140 * time.Millisecond,
	}
	for _, p := range out.Policies {
		away := 0
		for _, q := range p.Report.Requests {
			to := out.PodRegions[q.Pod]
			want := rtt[[2]string{q.Region, to}] + rtt[[2]string{to, q.Region}]
			if q.RTT != want {
				t.Fatalf("%s: request %d from %s served in %s with rtt %v, want %v", p.Policy, q.Index, q.Region, to, q.RTT, want)
			}
			if to != q.Region {
				away++
			}
		}
		if p.Policy == "oracle" && away == 0 || p.Policy == "local-oracle" && away != 0 {
			t.Fatalf("%s: %d requests served outside their region", p.Policy, away)
		}
	}
}

func TestRunRegionsRoundRobin(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"--workload=region-burst", "--fleet=l40sx2,h100", "--duration=4s", "--capacity=25.5",
		"--regions=us-east-1=1,us-west-2=1,eu-west-1=1",
		"--rtt=us-east-1/us-west-2=70ms,us-east-1/eu-west-1=80ms,us-west-2/eu-west-1=140ms"}
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	// One pod per region: round robin within the region keeps everything home.
	if !strings.Contains(stdout.String(), "| round-robin | us-east-1 |") ||
		strings.Contains(stdout.String(), "| round-robin | us-east-1 | 0 |") {
		t.Fatalf("no round-robin row for us-east-1:\n%s", stdout.String())
	}
	for _, line := range strings.Split(stdout.String(), "\n") {
		if (strings.HasPrefix(line, "| round-robin | us-") || strings.HasPrefix(line, "| round-robin | eu-")) &&
			!strings.HasSuffix(line, "| 0 (0.0%) |") {
			t.Fatalf("round robin served a request outside its region: %s", line)
		}
	}
}
