package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// engineBlockTokens is modelsim's KV block size: only full blocks are cached.
const engineBlockTokens = 16

// GroupAffinity says, for one policy of a shared-prefix run, where the repeats of a group went
// and whether they found the group's system prompt cached: it tells a hit rate lost by routing
// (a repeat sent to a pod that never served its group) from one lost on the pod (the pod served
// the group before but had evicted it, or had not finished prefilling it).
type GroupAffinity struct {
	Policy string `json:"policy"`
	// Repeats are the successful requests of a group an earlier successful request (by send
	// time) of the same policy belonged to.
	Repeats int `json:"repeats"`
	// Kept are the repeats sent to a pod that had served their group before; KeptHits those of
	// them that found at least half the system prompt cached.
	Kept     int `json:"kept"`
	KeptHits int `json:"kept_hits"`
	// Moved are the repeats sent to a pod that had not served their group; MovedHits those that
	// found it cached there all the same.
	Moved     int `json:"moved"`
	MovedHits int `json:"moved_hits"`
	// Ceiling is the prefix-cache hit rate (cached / prompt tokens) had every repeat found
	// every full block it shares with an earlier request cached: the most any routing can reach
	// on this request sequence, with a cache that never evicts.
	Ceiling float64 `json:"ceiling_hit_rate"`
}

// groupAffinity computes the GroupAffinity of every target of res, whose requests gen made;
// nil when the workload has no shared-prefix groups.
func groupAffinity(w *workload.Workload, res *loadgen.Result) []GroupAffinity {
	if w.SharedPrefix == nil || res == nil {
		return nil
	}
	gen := workload.NewGenerator(w, res.Seed)
	out := make([]GroupAffinity, 0, len(res.Targets))
	for _, t := range res.Targets {
		out = append(out, targetAffinity(gen, t))
	}
	return out
}

func targetAffinity(gen *workload.Generator, t loadgen.TargetResult) GroupAffinity {
	ok := make([]loadgen.Sample, 0, len(t.Samples))
	for _, s := range t.Samples {
		if s.OK() {
			ok = append(ok, s)
		}
	}
	slices.SortStableFunc(ok, func(a, b loadgen.Sample) int { return int(a.Sent - b.Sent) })
	ga := GroupAffinity{Policy: t.Name}
	served := map[int]map[string]bool{} // group → pods that served it
	asked := map[string]bool{}          // prompts already sent
	var prompt, ceiling int
	for _, s := range ok {
		r := gen.Request(s.Index)
		sys := len(r.System) / workload.CharsPerToken
		whole := r.System + r.Prompt
		prompt += s.PromptTokens
		switch {
		case asked[whole]:
			ceiling += (s.PromptTokens - 1) / engineBlockTokens * engineBlockTokens
		case served[r.Group] != nil:
			ceiling += sys / engineBlockTokens * engineBlockTokens
		}
		asked[whole] = true
		pods := served[r.Group]
		if pods == nil {
			served[r.Group] = map[string]bool{s.Endpoint: true}
			continue
		}
		hit := 2*s.CachedTokens >= sys
		ga.Repeats++
		if pods[s.Endpoint] {
			ga.Kept++
			ga.KeptHits += b2i(hit)
		} else {
			ga.Moved++
			ga.MovedHits += b2i(hit)
		}
		pods[s.Endpoint] = true
	}
	if prompt > 0 {
		ga.Ceiling = float64(ceiling) / float64(prompt)
	}
	return ga
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// affinityOf returns policy's GroupAffinity, or nil.
func (f Figures) affinityOf(policy string) *GroupAffinity {
	i := slices.IndexFunc(f.Affinity, func(a GroupAffinity) bool { return a.Policy == policy })
	if i < 0 {
		return nil
	}
	return &f.Affinity[i]
}

// writeAffinity renders the figures of a shared-prefix run.
func writeAffinity(b *strings.Builder, all []GroupAffinity) {
	if len(all) == 0 {
		return
	}
	b.WriteString("\n## Shared-prefix groups\n\nA repeat is a request of a group an earlier request of the same " +
		"policy belonged to; kept: sent to a pod that had served its group, moved: to one that had not; a hit " +
		"found at least half its system prompt cached. Ceiling: the hit rate had every repeat found every block " +
		"it shares with an earlier request cached (no eviction, perfect placement).\n\n" +
		"| policy | repeats | kept | kept hits | moved | moved hits | ceiling hit rate |\n" +
		"|---|---:|---:|---:|---:|---:|---:|\n")
	for _, a := range all {
		fmt.Fprintf(b, "| %s | %d | %d | %d | %d | %d | %.1f%% |\n",
			a.Policy, a.Repeats, a.Kept, a.KeptHits, a.Moved, a.MovedHits, 100*a.Ceiling)
	}
}
