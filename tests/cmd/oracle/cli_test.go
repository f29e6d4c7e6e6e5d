package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{"bad baseline", []string{"--baseline=random"}, 2, "round-robin or none"},
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

func TestRunWritesReports(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.json")
	var stdout, stderr bytes.Buffer
	args := []string{"--workload=mixed-fleet", "--fleet=h100,a10gx2", "--duration=3s", "--rate=6", "--json=" + path}
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	for _, want := range []string{"| oracle |", "| round-robin |", "oracle / round-robin TTFT", "| 2 | a10g |"} {
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
	if len(out.Policies) != 2 || out.Rate != 6 || len(out.Fleet) != 3 ||
		len(out.Policies[0].Report.Requests) != out.Policies[0].Summary.Requests || out.Policies[0].Summary.Requests < 5 {
		t.Fatalf("json report: %d policies, rate %v, fleet %v", len(out.Policies), out.Rate, out.Fleet)
	}
}
