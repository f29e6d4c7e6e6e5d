package bench

import "fmt"

// pdLongPrompt compares prefill/decode disaggregation with an aggregated fleet of as many pods
// on long prompts: the gateway's pd profile over 2 prefill and 2 decode pods against its
// default profile over 4 pods that do both.
var pdLongPrompt = Scenario{
	Name: "pd-long-prompt", Workload: "long-prompt",
	Pools:    []Pool{{Profile: "h100", Count: 4}},
	Policies: []string{"default", "pd"},
	Baseline: "default",
	PolicyPools: map[string][]RolePool{
		"pd": {{Pool{Profile: "h100", Count: 2}, "prefill"}, {Pool{Profile: "h100", Count: 2}, "decode"}},
	},
	Target: "pd (2 prefill + 2 decode) ITL P99 <= 0.5x the aggregated fleet's (default, 4 pods)",
	Check: func(f Figures) Verdict {
		pd, agg := f.ITL("pd", 99), f.ITL("default", 99)
		return Verdict{
			pd <= 0.5*agg,
			fmt.Sprintf("ITL P99: pd %.1f ms, aggregated %.1f ms (%.2fx); TTFT P95: pd %s, aggregated %s",
				pd, agg, pd/agg, ms(f.TTFT("pd", 95)), ms(f.TTFT("default", 95))),
		}
	},
}
