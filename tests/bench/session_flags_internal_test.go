package bench

import (
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

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
