package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

// The policies of the precise-prefix scenario: the shipped default profile with its
// prefix-cache-scorer (approximate: the gateway's routing history); the profile for precise
// scoring (docs/scheduling.md): the same with the precise-prefix-cache-scorer (the pods' KV
// cache events) in its place at prefix weight PrecisePrefixWeight; and, as the control that
// tells the events' part from the weight's, the approximate scorer at that weight.
const (
	PolicyPrecise          = "precise"
	PolicyApproximate      = "approximate"
	PolicyApproximateHeavy = "approximate-heavy"
)

// PrecisePrefixWeight is the prefix scorer's weight in the profile for precise scoring (the
// default profile's is 1): tuned on seeds 101-105 of this scenario.
const PrecisePrefixWeight = 6

// kvHashSeed is the pods' simulated PYTHONHASHSEED and the precise scorer's hashSeed.
const kvHashSeed = "7"

// defaultProfileWith is the shipped default profile (scheduling/profiles/default.yaml) with
// prefixPlugin as its prefix scorer, at prefixWeight.
func defaultProfileWith(prefixPlugin string, prefixWeight float64) string {
	return strings.NewReplacer("PREFIX_WEIGHT", strconv.FormatFloat(prefixWeight, 'g', -1, 64),
		"PREFIX", prefixPlugin).Replace(`apiVersion: inference.networking.x-k8s.io/v1alpha1
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
    weight: PREFIX_WEIGHT
  - pluginRef: kv-cache-utilization-scorer
    weight: 0.5
  - pluginRef: lora-affinity-scorer
    weight: 1
  - pluginRef: max-score-picker
`)
}

const (
	approximatePlugin = "type: prefix-cache-scorer\n  name: prefix"
	precisePlugin     = "type: precise-prefix-cache-scorer\n  name: prefix\n" +
		"  parameters:\n    hashSeed: \"" + kvHashSeed + "\""
)

// precisePrefix compares precise and approximate prefix scoring on the shared-prefix workload
// reshaped to fit the fleet's cache less: 100 groups, each a 1,500-token system prompt and
// 300-token questions, on four A10G pods. The groups' prefixes, 150,000 tokens, exceed the
// fleet's 120,000 tokens of KV cache (before the questions and outputs that also hold blocks), so
// pods evict prefixes the approximate index may still believe they hold.
var precisePrefix = Scenario{
	Name: "precise-prefix", Workload: "shared-prefix",
	Pools: []Pool{{"a10g", 4}},
	Shape: func(w *workload.Workload) {
		w.SharedPrefix.Groups, w.SharedPrefix.SystemTokens, w.SharedPrefix.QuestionTokens = 100, 1500, 300
	},
	Quick: 60 * time.Second, // fewer requests would rarely repeat a group

	KVEvents: true,
	Policies: []string{PolicyApproximate, PolicyPrecise, PolicyApproximateHeavy},
	PolicyConfigs: map[string]string{
		PolicyApproximate:      defaultProfileWith(approximatePlugin, 1),
		PolicyPrecise:          defaultProfileWith(precisePlugin, PrecisePrefixWeight),
		PolicyApproximateHeavy: defaultProfileWith(approximatePlugin, PrecisePrefixWeight),
	},
	Target: "precise prefix-cache hit rate >= 1.5x approximate's and P95 TTFT <= 0.7x approximate's " +
		"(working set > fleet KV)",
	Check: checkPrecise,
}

// checkPrecise decides the target, and says how far the hit rate could go on the sequence at
// all: the ceiling over approximate's hit rate bounds the ratio any routing can reach.
func checkPrecise(f Figures) Verdict {
	hp, ha := f.HitRate(PolicyPrecise), f.HitRate(PolicyApproximate)
	tp, ta := f.TTFT(PolicyPrecise, 95), f.TTFT(PolicyApproximate, 95)
	detail := fmt.Sprintf("hit rate: precise %.1f%%, approximate %.1f%% (%.2fx); P95: precise %s, approximate %s (%.2fx)",
		100*hp, 100*ha, hp/ha, ms(tp), ms(ta), tp/ta)
	if a := f.affinityOf(PolicyApproximate); a != nil && a.Ceiling > 0 {
		detail += fmt.Sprintf("; ceiling hit rate %.1f%% (%.2fx approximate's)", 100*a.Ceiling, a.Ceiling/ha)
	}
	return Verdict{hp >= 1.5*ha && tp <= 0.7*ta, detail}
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
