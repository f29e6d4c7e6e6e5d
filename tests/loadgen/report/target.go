package report

import (
	"slices"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
)

// populations are the values percentiles are taken over; failures are +Inf.
type populations struct {
	ttft, e2e, itl []float64
	byRegion       map[string][]float64
}

// summarizeTarget computes one target's figures from its samples.
func summarizeTarget(tr *loadgen.TargetResult) Target {
	t := Target{Name: tr.Name, URL: tr.URL, Requests: len(tr.Samples), ErrorsByKind: map[string]int{}}
	p := populations{byRegion: map[string][]float64{}}
	var last time.Duration
	for i := range tr.Samples {
		s := &tr.Samples[i]
		last = max(last, s.Sent+s.E2E)
		t.add(s, &p)
	}
	t.ErrorRate = ratio(Num(t.Errors), Num(t.Requests))
	t.TTFTMs, t.E2EMs, t.ITLMs = percentiles(p.ttft), percentiles(p.e2e), percentiles(p.itl)
	t.OutputTokensPerS = ratio(Num(t.OutputTokens), Num(last.Seconds()))
	t.PrefixCacheHitRate = ratio(Num(t.CachedTokens), Num(t.PromptTokens))
	t.TTFTCDF = cdf(p.ttft)
	t.Timeline = timeline(tr.Samples)
	t.shares(tr)
	if len(p.byRegion) > 1 || (len(p.byRegion) == 1 && p.byRegion[""] == nil) {
		t.ByClientRegion = map[string]Percentiles{}
		for region, v := range p.byRegion {
			t.ByClientRegion[region] = percentiles(v)
		}
	}
	return t
}

// add counts one sample and adds it to the populations.
func (t *Target) add(s *loadgen.Sample, p *populations) {
	if !s.OK() {
		t.Errors++
		t.ErrorsByKind[string(s.Error)]++
		p.ttft, p.e2e = append(p.ttft, inf), append(p.e2e, inf)
		for range max(1, s.MaxTokens-1) {
			p.itl = append(p.itl, inf)
		}
		p.byRegion[s.Region] = append(p.byRegion[s.Region], inf)
		return
	}
	t.OK++
	p.ttft, p.e2e = append(p.ttft, ms(s.TTFT)), append(p.e2e, ms(s.E2E))
	p.byRegion[s.Region] = append(p.byRegion[s.Region], ms(s.TTFT))
	for _, g := range s.ITLs {
		p.itl = append(p.itl, ms(g))
	}
	t.OutputTokens += s.OutputTokens
	t.PromptTokens += s.PromptTokens
	t.CachedTokens += s.CachedTokens
}

// shares fills the per-endpoint, cluster, region and route shares.
func (t *Target) shares(tr *loadgen.TargetResult) {
	n := float64(len(tr.Samples))
	share := func(key func(*loadgen.Sample) string, fallback string) map[string]float64 {
		counts, seen := map[string]int{}, fallback != ""
		for i := range tr.Samples {
			k := key(&tr.Samples[i])
			switch {
			case k != "":
				seen = true
			case fallback != "":
				k = fallback
			default:
				k = "none"
			}
			counts[k]++
		}
		if !seen || n == 0 {
			return nil
		}
		m := make(map[string]float64, len(counts))
		for k, c := range counts {
			m[k] = float64(c) / n
		}
		return m
	}
	t.EndpointShare = share(func(s *loadgen.Sample) string { return s.Endpoint }, tr.Name)
	t.ClusterShare = share(func(s *loadgen.Sample) string { return s.Cluster }, "")
	t.RegionShare = share(func(s *loadgen.Sample) string { return s.ServedRegion }, "")
	t.RouteShare = share(func(s *loadgen.Sample) string { return s.Route }, "")
	if t.EndpointShare == nil {
		t.EndpointShare = map[string]float64{}
	}
}

// cdf keeps at most CDFPoints points of the distribution of values (which include +Inf for
// failures): each point is (value, fraction of all values ≤ it).
func cdf(values []float64) []CDFPoint {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	finite := len(sorted)
	for finite > 0 && sorted[finite-1] == inf {
		finite--
	}
	n := float64(len(sorted))
	out := make([]CDFPoint, 0, min(finite, CDFPoints))
	for k := 1; k <= min(finite, CDFPoints); k++ {
		i := k*finite/min(finite, CDFPoints) - 1
		out = append(out, CDFPoint{Ms: sorted[i], Frac: float64(i+1) / n})
	}
	return out
}

// timeline counts requests per second of sending time.
func timeline(samples []loadgen.Sample) []Bucket {
	var out []Bucket
	for i := range samples {
		sec := int(samples[i].Sent / time.Second)
		for len(out) <= sec {
			out = append(out, Bucket{Second: len(out)})
		}
		out[sec].Sent++
		if samples[i].OK() {
			out[sec].OK++
		} else {
			out[sec].Errors++
		}
	}
	return out
}
