package bench

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// TestPolicyConfigFlag checks --policy-config: NAME=FILE pairs of existing files, one a flag.
func TestPolicyConfigFlag(t *testing.T) {
	file := filepath.Join("..", "..", "cluster-gateway", "internal", "scheduling", "profiles", "default.yaml")
	tests := []struct {
		name, v string
		ok      bool
	}{
		{"pair", "no-session=" + file, true},
		{"no name", "=" + file, false},
		{"no file", "no-session=", false},
		{"no pair", "no-session", false},
		{"missing file", "x=does-not-exist.yaml", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policyConfigFlag{}
			err := p.Set(tt.v)
			if (err == nil) != tt.ok {
				t.Fatalf("Set(%q) = %v, want ok %v", tt.v, err, tt.ok)
			}
			if tt.ok && p["no-session"] != file {
				t.Fatalf("Set(%q) kept %v", tt.v, p)
			}
		})
	}
}

// TestWithTraceWindow checks that --session-ids and --trace-start reach a trace workload and
// leave it alone when unset.
func TestWithTraceWindow(t *testing.T) {
	w, err := workload.Load("trace-conversation")
	if err != nil {
		t.Fatal(err)
	}
	same, err := withTraceWindow(&Config{}, w)
	if err != nil || same != w {
		t.Fatalf("unset flags changed the workload: %v", err)
	}
	got, err := withTraceWindow(&Config{Sessions: true, TraceStart: 20 * time.Minute}, w)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Trace.Sessions || got.Trace.Start != 20*time.Minute {
		t.Fatalf("trace settings %+v, want sessions and a 20m start", got.Trace)
	}
	if w.Trace.Sessions || w.Trace.Start != 0 {
		t.Fatalf("the scenario's own workload was edited: %+v", w.Trace)
	}
}
