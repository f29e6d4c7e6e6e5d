package bench

import (
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// TestPDScenarioFleets: the pd policy runs 2 prefill and 2 decode pods, the aggregated one 4
// pods that do both, and the gateway's endpoints file carries the roles.
func TestPDScenarioFleets(t *testing.T) {
	sc, err := Lookup("pd-long-prompt")
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.Load(sc.Workload)
	if err != nil {
		t.Fatal(err)
	}
	for policy, want := range map[string][]string{
		PolicyPD:       {"prefill", "prefill", "decode", "decode"},
		PolicyPDFixed:  {"prefill", "prefill", "decode", "decode"},
		PolicyPD3Plus1: {"prefill", "prefill", "prefill", "decode"},
		"default":      {"both", "both", "both", "both"},
	} {
		cfgs, _ := fleetConfigs(sc.forPolicy(policy), w, 1)
		if len(cfgs) != len(want) {
			t.Fatalf("%s: %d pods, want %d", policy, len(cfgs), len(want))
		}
		for i, c := range cfgs {
			if c.Role != want[i] || c.Profile != "h100" {
				t.Errorf("%s pod %d: %s %s, want h100 %s", policy, i, c.Profile, c.Role, want[i])
			}
		}
	}
	file := string(endpointsFile([]string{"127.0.0.1:1", "127.0.0.1:2"}, []string{"h100", "h100"}, nil, "prefill", ""))
	if want := "- address: \"127.0.0.1:1\"\n  role: prefill\n- address: \"127.0.0.1:2\"\n"; file != want {
		t.Fatalf("endpoints file:\n%s\nwant:\n%s", file, want)
	}
	if w.Seed == 0 || !strings.Contains(sc.Target, "ITL P99") {
		t.Fatalf("seed %d, target %q", w.Seed, sc.Target)
	}
	if got := pools(sc); !strings.Contains(got, "pd: 2 × h100 prefill + 2 × h100 decode") {
		t.Fatalf("report's fleet line %q does not show pd's fleet", got)
	}
	// The 3 + 1 policy runs the built-in pd profile's handler; the fixed one llm-d's threshold.
	if !strings.Contains(sc.PolicyConfigs[PolicyPD3Plus1], "selective: true") ||
		strings.Contains(sc.PolicyConfigs[PolicyPDFixed], "selective") {
		t.Fatalf("pd configs: %v", sc.PolicyConfigs)
	}
	for _, s := range Tier1Scenarios() {
		if s.Name == sc.Name {
			t.Fatal("the sweep runs the pd scenario with the common policies")
		}
	}
}
