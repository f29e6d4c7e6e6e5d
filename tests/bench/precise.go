package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

// The policies of the precise-prefix scenario: the shipped default profile with its
// prefix-cache-scorer (approximate: the gateway's routing history), and the same profile with
// the precise-prefix-cache-scorer in its place (the pods' KV cache events), weights unchanged.
const (
	PolicyPrecise     = "precise"
	PolicyApproximate = "approximate"
)

// kvHashSeed is the pods' simulated PYTHONHASHSEED and the precise scorer's hashSeed.
const kvHashSeed = "7"

// defaultProfileWith is the shipped default profile (scheduling/profiles/default.yaml) with
// prefixPlugin as its prefix scorer.
func defaultProfileWith(prefixPlugin string) string {
	return strings.ReplaceAll(`apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: saturation-filter
  parameters:
    queueDepthThreshold: 5
    queueDepthScope: pool
    countSentSinceScrape: true
    kvCacheUtilThreshold: 0.8
    metricsStalenessThreshold: 2s
- type: slo-filter
- PREFIX
- type: predicted-ttft-scorer
- type: kv-cache-utilization-scorer
- type: lora-affinity-scorer
- type: max-score-picker
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: saturation-filter
  - pluginRef: slo-filter
  - pluginRef: predicted-ttft-scorer
    weight: 6
  - pluginRef: prefix
    weight: 1
  - pluginRef: kv-cache-utilization-scorer
    weight: 0.5
  - pluginRef: lora-affinity-scorer
    weight: 1
  - pluginRef: max-score-picker
`, "PREFIX", prefixPlugin)
}

// precisePrefix compares precise and approximate prefix scoring on the shared-prefix workload
// reshaped to fit the fleet's cache less: 100 groups, each a 1,500-token system prompt and
// 300-token questions, on four A10G pods. The groups' prefixes, 150,000 tokens, exceed the
// fleet's 120,000 tokens of KV cache (before the questions and outputs that also hold blocks), so
// pods evict prefixes the approximate index still believes they hold.
var precisePrefix = Scenario{
	Name: "precise-prefix", Workload: "shared-prefix",
	Pools: []Pool{{"a10g", 4}},
	Shape: func(w *workload.Workload) {
		w.SharedPrefix.Groups, w.SharedPrefix.SystemTokens, w.SharedPrefix.QuestionTokens = 100, 1500, 300
	},
	Quick: 60 * time.Second, // fewer requests would rarely repeat a group

	KVEvents: true,
	Policies: []string{PolicyApproximate, PolicyPrecise},
	PolicyConfigs: map[string]string{
		PolicyApproximate: defaultProfileWith("type: prefix-cache-scorer\n  name: prefix"),
		PolicyPrecise: defaultProfileWith("type: precise-prefix-cache-scorer\n  name: prefix\n" +
			"  parameters:\n    hashSeed: \"" + kvHashSeed + "\""),
	},
	Target: "precise prefix-cache hit rate >= 1.5x approximate's and P95 TTFT <= 0.7x approximate's " +
		"(working set > fleet KV)",
	Check: func(f Figures) Verdict {
		hp, ha := f.HitRate(PolicyPrecise), f.HitRate(PolicyApproximate)
		tp, ta := f.TTFT(PolicyPrecise, 95), f.TTFT(PolicyApproximate, 95)
		return Verdict{hp >= 1.5*ha && tp <= 0.7*ta,
			fmt.Sprintf("hit rate: precise %.1f%%, approximate %.1f%% (%.2fx); P95: precise %s, approximate %s (%.2fx)",
				100*hp, 100*ha, hp/ha, ms(tp), ms(ta), tp/ta)}
	},
}

// loadWorkload loads the scenario's workload and applies its Shape.
func (s Scenario) loadWorkload() (*workload.Workload, error) {
	w, err := workload.Load(s.Workload)
	if err != nil || s.Shape == nil {
		return w, err
	}
	w = w.Clone()
	s.Shape(w)
	return w, w.Validate()
}

// kvEvents points every pod of a scenario with KVEvents at the gateway's SUB socket endpoint
// (tcp://HOST:PORT); the pods connect and publish once the gateway binds it.
func kvEvents(sc Scenario, cfgs []server.Config, endpoint string) {
	if !sc.KVEvents {
		return
	}
	for i := range cfgs {
		cfgs[i].KVEventsEndpoint, cfgs[i].HashSeed = endpoint, kvHashSeed
	}
}

// scenarioConfig writes the scenario's EndpointPickerConfig for policy into dir and returns
// its path, or "" when the scenario has none for it.
func scenarioConfig(sc Scenario, policy, dir string) (string, error) {
	text, ok := sc.PolicyConfigs[policy]
	if !ok {
		return "", nil
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%s-config.yaml", sc.Name, policy))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	return path, nil
}
