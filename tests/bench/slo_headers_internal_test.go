package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// TestScaleTimeScalesSLOHeaders checks that the objectives sent as headers are scaled to real
// time with everything else, leaving the simulated workload alone.
func TestScaleTimeScalesSLOHeaders(t *testing.T) {
	w, err := workload.Load("mixed-fleet")
	if err != nil {
		t.Fatal(err)
	}
	classes, err := workload.ParseSLOClasses("ttft=2s,tpot=100ms,share=0.75;ttft=2s,priority=-1")
	if err != nil {
		t.Fatal(err)
	}
	if w, err = w.WithSLOHeaders(classes); err != nil {
		t.Fatal(err)
	}
	real, err := scaleTime(w, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if got := real.SLOHeaders[0]; got.TTFT != 200*time.Millisecond || got.TPOT != 10*time.Millisecond {
		t.Errorf("scaled class 1 = %s, want ttft=200ms,tpot=10ms", got)
	}
	if got := real.SLOHeaders[1]; got.TTFT != 200*time.Millisecond || got.Priority == nil || *got.Priority != -1 {
		t.Errorf("scaled class 2 = %s", got)
	}
	if w.SLOHeaders[0].TTFT != 2*time.Second {
		t.Errorf("scaling changed the simulated workload: %s", w.SLOHeaders[0])
	}
}

func TestPolicyConfigFlag(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(file, []byte("plugins: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := policyConfigFlag{}
	if err := p.Set("no-slo-filter=" + file); err != nil {
		t.Fatal(err)
	}
	if p["no-slo-filter"] != file {
		t.Fatalf("flag = %v", p)
	}
	for _, bad := range []string{"no-file", "=x.yaml", "name=", "name=" + file + ".missing"} {
		if err := p.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
	var stderr strings.Builder
	if code := Main(
		t.Context(),
		[]string{"--scenario=mixed-fleet", "--slo-headers=ttft=-1s"},
		&stderr,
		&stderr,
	); code != 2 ||
		!strings.Contains(stderr.String(), "--slo-headers") {
		t.Errorf("bad --slo-headers: exit %d, %q", code, stderr.String())
	}
}
