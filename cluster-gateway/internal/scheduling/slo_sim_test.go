package scheduling_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scheduling"
)

// goodput is the share of the requests sent that met both objectives (a refused request met
// none), and the share refused.
func (sm *sim) goodput() (met, refused float64) {
	n := 0
	for _, r := range sm.done {
		if r.ttft <= sm.slo.TTFT && r.itl <= sm.slo.TPOT {
			n++
		}
	}
	sent := float64(max(1, len(sm.done)+sm.refused+sm.failed))
	return float64(n) / sent, float64(sm.refused) / sent
}

// On a mixed fleet (four fast pods, four ten-times-slower ones) at 130 requests a second, more than the fast pods alone
// cannot carry, every request asks for a 1 s time to first token and 25 ms per output token,
// which only the fast pods can decode at; a quarter are sheddable. The predicted-ttft scorer
// alone knows nothing of TPOT and sends a share to the slow pods, where it misses; with the
// slo-filter the requests go to the pods predicted to meet both, the sheddable ones no pod can
// meet are refused at once, and more of the requests sent meet their objectives. Virtual clock,
// four seeds pooled; the figures are logged (goodput at SLO with and without the filter).
func TestSLOFilterRaisesGoodput(t *testing.T) {
	raw, err := scheduling.ProfileYAML(scheduling.ProfileDefault)
	if err != nil {
		t.Fatal(err)
	}
	without := filepath.Join(t.TempDir(), "no-slo-filter.yaml")
	stripped := strings.Replace(
		strings.Replace(string(raw), "- type: slo-filter\n", "", 1),
		"  - pluginRef: slo-filter\n",
		"",
		1,
	)
	if strings.Contains(stripped, "type: slo-filter") || strings.Contains(stripped, "pluginRef: slo-filter") {
		t.Fatal("could not remove the slo-filter from the default profile")
	}
	if err := os.WriteFile(without, []byte(stripped), 0o600); err != nil {
		t.Fatal(err)
	}
	var met, refused [2]float64
	const seeds = 4
	for seed := uint64(1); seed <= seeds; seed++ {
		for i, file := range []string{"", without} {
			sm := newSimWith(t, file, mixedFleet())
			sm.flow, sm.sheddable = true, 0.25
			sm.slo = framework.SLO{TTFT: time.Second, TPOT: 25 * time.Millisecond}
			sm.run(seed, 130, 20*time.Second, nil, 1)
			m, r := sm.goodput()
			met[i] += m / seeds
			refused[i] += r / seeds
		}
	}
	t.Logf("goodput at SLO: %.1f%% with the slo-filter (%.1f%% refused as unattainable), %.1f%% without (%.1f%% refused)",
		100*met[0], 100*refused[0], 100*met[1], 100*refused[1])
	if met[0] <= met[1] {
		t.Errorf("goodput at SLO %.3f with the filter, want above the %.3f without", met[0], met[1])
	}
	if refused[1] != 0 {
		t.Errorf("%.3f refused without the filter, want none", refused[1])
	}
}
