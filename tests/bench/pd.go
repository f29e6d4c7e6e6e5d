package bench

import (
	"fmt"
	"strings"
)

// The prefill/decode policies of pd-long-prompt besides the aggregated default: the gateway's pd
// profile (selective disaggregation) over 2 prefill + 2 decode pods and over 3 + 1, and llm-d's
// fixed threshold (every prompt of 256 uncached tokens or more split) over 2 + 2.
const (
	PolicyPD        = "pd"
	PolicyPDFixed   = "pd-fixed"
	PolicyPD3Plus1  = "pd-3p1d"
	pdSplitPrefills = 2 // the 2 + 2 split's prefill pods
)

// pdSplit is a fleet of prefill prefill pods and decode decode pods, all h100.
func pdSplit(prefill, decode int) []RolePool {
	return []RolePool{{Pool{Profile: "h100", Count: prefill}, "prefill"}, {Pool{Profile: "h100", Count: decode}, "decode"}}
}

// pdConfig is the gateway's pd profile with the handler parameters params.
func pdConfig(params string) string {
	return strings.ReplaceAll(`apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: pd-profile-handler
  parameters: PARAMS
- type: decode-filter
- type: prefill-filter
- type: saturation-filter
  parameters: {queueDepthThreshold: 5, queueDepthScope: pool, countSentSinceScrape: true, kvCacheUtilThreshold: 0.8,
    metricsStalenessThreshold: 2s}
- type: prefix-cache-scorer
- type: kv-cache-utilization-scorer
- type: running-requests-size-scorer
- type: queue-scorer
- type: max-score-picker
schedulingProfiles:
- name: decode
  plugins:
  - pluginRef: decode-filter
  - pluginRef: saturation-filter
  - {pluginRef: kv-cache-utilization-scorer, weight: 2}
  - {pluginRef: running-requests-size-scorer, weight: 1}
  - {pluginRef: prefix-cache-scorer, weight: 1}
  - pluginRef: max-score-picker
- name: prefill
  plugins:
  - pluginRef: prefill-filter
  - {pluginRef: queue-scorer, weight: 2}
  - {pluginRef: prefix-cache-scorer, weight: 1}
  - pluginRef: max-score-picker
`, "PARAMS", params)
}

// pdLongPrompt compares prefill/decode disaggregation with an aggregated fleet of as many pods
// on long prompts: the gateway's default profile over 4 pods that do both against its pd
// profile (selective) over 2 prefill + 2 decode pods and over 3 + 1, and against llm-d's fixed
// threshold over 2 + 2. The policy list (--policies) chooses the splits run.
var pdLongPrompt = Scenario{
	Name: "pd-long-prompt", Workload: "long-prompt",
	Pools:    []Pool{{Profile: "h100", Count: 4}},
	Policies: []string{"default", PolicyPDFixed, PolicyPD, PolicyPD3Plus1},
	Baseline: "default",
	PolicyPools: map[string][]RolePool{
		PolicyPDFixed:  pdSplit(pdSplitPrefills, 4-pdSplitPrefills),
		PolicyPD:       pdSplit(pdSplitPrefills, 4-pdSplitPrefills),
		PolicyPD3Plus1: pdSplit(3, 1),
	},
	PolicyConfigs: map[string]string{
		PolicyPDFixed:  pdConfig("{threshold: 256}"),
		PolicyPD3Plus1: pdConfig("{threshold: 256, selective: true, itlBudget: 50ms, transferPerToken: 5us}"),
	},
	Target: "pd (2 prefill + 2 decode) ITL P99 <= 0.5x the aggregated fleet's (default, 4 pods)",
	Check: func(f Figures) Verdict {
		pd, agg := f.ITL(PolicyPD, 99), f.ITL("default", 99)
		return Verdict{
			pd <= 0.5*agg,
			fmt.Sprintf("ITL P99: pd %.1f ms, aggregated %.1f ms (%.2fx); TTFT P95: pd %s, aggregated %s",
				pd, agg, pd/agg, ms(f.TTFT(PolicyPD, 95)), ms(f.TTFT("default", 95))),
		}
	},
}
