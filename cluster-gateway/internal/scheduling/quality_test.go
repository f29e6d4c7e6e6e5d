package scheduling_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scheduling"
)

// newScheduler builds profile over h with h's virtual clock.
func newScheduler(t testing.TB, profile string, h *plugintest.Handle) *scheduling.Scheduler {
	t.Helper()
	cfg := scheduling.DefaultConfig()
	cfg.Profile = profile
	cfg.Now = h.Now
	s, err := scheduling.New(cfg, h, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dispatch schedules n requests back to back, as the front door does (PreRequest, in-flight +1),
// with no scrape and no completion in between, and returns the picks per address.
func dispatch(t *testing.T, s *scheduling.Scheduler, n int) map[string]int {
	t.Helper()
	picks := map[string]int{}
	for i := 0; i < n; i++ {
		req := &framework.Request{ID: fmt.Sprint(i), Model: "m", BaseModel: "m", PromptTokens: 1000}
		res, err := s.Schedule(context.Background(), req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		s.PreRequest(context.Background(), req, res)
		res.Targets[0].(*plugintest.FakeEndpoint).AddInFlight(1)
		picks[res.Targets[0].Meta().Address]++
	}
	return picks
}

func TestSaturatedSlowPodAvoided(t *testing.T) {
	tests := []struct {
		profile  string
		wantSlow func(int) bool
	}{
		{"default", func(n int) bool { return n == 0 }},
		{"round-robin", func(n int) bool { return n == 10 }},
	}
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			at := plugintest.Epoch
			fast1 := plugintest.Endpoint("10.0.0.1:8000", "m", 0, 2, 0.1, at)
			fast2 := plugintest.Endpoint("10.0.0.2:8000", "m", 0, 2, 0.1, at)
			slow := plugintest.Endpoint("10.0.0.3:8000", "m", 8, 30, 0.85, at) // queue 8, KV 85%
			s := newScheduler(t, tt.profile, plugintest.NewHandle(fast1, fast2, slow))
			picks := dispatch(t, s, 30)
			if got := picks[slow.Meta().Address]; !tt.wantSlow(got) {
				t.Fatalf("saturated slow pod got %d of 30 requests (picks %v)", got, picks)
			}
		})
	}
}

func TestBurstIsSpread(t *testing.T) {
	tests := []struct {
		profile string
		maxPod  int // most requests any one pod may receive
	}{
		// 40 simultaneous requests over 8 idle pods: the default sees its own in-flight counts.
		{"default", 6},
		{"least-request", 5},
	}
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			var eps []*plugintest.FakeEndpoint
			for i := range 8 {
				// One pod looks slightly better in the last scrape: a stale-view picker herds onto it.
				q := 1
				if i == 0 {
					q = 0
				}
				eps = append(eps, plugintest.Endpoint(fmt.Sprintf("10.0.0.%d:8000", i+1), "m", q, 4, 0.2, plugintest.Epoch))
			}
			s := newScheduler(t, tt.profile, plugintest.NewHandle(plugintest.Endpoints(eps...)...))
			dispatch(t, s, 40)
			for _, e := range eps {
				if e.InFlight() > int64(tt.maxPod) {
					t.Errorf("%s has %d in flight after a burst of 40 over 8 pods (max %d)", e.Meta().Address, e.InFlight(), tt.maxPod)
				}
			}
		})
	}
}

func TestGIEDefaultHerdsOnStaleView(t *testing.T) {
	// The weakness the default profile fixes: GIE's scorers see only scraped metrics, so a burst
	// between two scrapes lands on the pod that looked best.
	var eps []*plugintest.FakeEndpoint
	for i := range 8 {
		q := 1
		if i == 0 {
			q = 0
		}
		eps = append(eps, plugintest.Endpoint(fmt.Sprintf("10.0.0.%d:8000", i+1), "m", q, 4, 0.2, plugintest.Epoch))
	}
	s := newScheduler(t, "gie-default", plugintest.NewHandle(plugintest.Endpoints(eps...)...))
	picks := dispatch(t, s, 40)
	if picks[eps[0].Meta().Address] < 30 {
		t.Fatalf("gie-default spread the burst (%v); the comparison in the docs assumes it herds", picks)
	}
}

func TestMixedFleetQuality(t *testing.T) {
	p95 := map[string]time.Duration{}
	for _, profile := range []string{"default", "gie-default", "round-robin", "least-request"} {
		sm := newSim(t, profile, mixedFleet())
		sm.run(42, 60, 15*time.Second, nil, 0)
		p95[profile] = sm.ttftPercentile(0.95)
		t.Logf("%-14s p50=%v p95=%v p99=%v done=%d rejected=%d slow-pod share=%.3f", profile,
			sm.ttftPercentile(0.5), p95[profile], sm.ttftPercentile(0.99), len(sm.done), sm.failed, sm.slowShare())
		if profile == "default" && sm.slowShare() > 0.03 {
			t.Errorf("default sent %.1f%% of requests to 10x slower pods", 100*sm.slowShare())
		}
	}
	if p95["default"]*5 > p95["round-robin"] || p95["default"] > p95["gie-default"] {
		t.Errorf("default P95 TTFT %v; want < 1/5 of round robin's %v and <= gie-default's %v",
			p95["default"], p95["round-robin"], p95["gie-default"])
	}
}

func TestBurstyQuality(t *testing.T) {
	// 2 s bursts at 4x the mean rate every 8 s, peaking near 90% of the fleet's capacity.
	shape := func(now time.Duration) float64 {
		if now%(8*time.Second) < 2*time.Second {
			return 4
		}
		return 0
	}
	p95 := map[string]time.Duration{}
	for _, profile := range []string{"default", "gie-default", "round-robin"} {
		sm := newSim(t, profile, mixedFleet())
		sm.run(7, 30, 32*time.Second, shape, 4)
		p95[profile] = sm.ttftPercentile(0.95)
		t.Logf("%-14s p50=%v p95=%v p99=%v done=%d rejected=%d", profile,
			sm.ttftPercentile(0.5), p95[profile], sm.ttftPercentile(0.99), len(sm.done), sm.failed)
	}
	if p95["default"]*10 > p95["round-robin"] || p95["default"] > p95["gie-default"] {
		t.Errorf("default P95 TTFT %v on bursts; want < 1/10 of round robin's %v and <= gie-default's %v",
			p95["default"], p95["round-robin"], p95["gie-default"])
	}
}

func TestUniformFleetNoRegression(t *testing.T) {
	fleet := []simProfile{fastGPU, fastGPU, fastGPU, fastGPU}
	p95 := map[string]time.Duration{}
	for _, profile := range []string{"default", "round-robin"} {
		sm := newSim(t, profile, fleet)
		sm.run(3, 80, 15*time.Second, nil, 0) // ~70% of 4 pods' prefill capacity
		p95[profile] = sm.ttftPercentile(0.95)
		t.Logf(
			"%-12s p50=%v p95=%v p99=%v done=%d",
			profile,
			sm.ttftPercentile(0.5),
			p95[profile],
			sm.ttftPercentile(0.99),
			len(sm.done),
		)
	}
	if float64(p95["default"]) > 1.1*float64(p95["round-robin"])+float64(5*time.Millisecond) {
		t.Errorf("default P95 %v is worse than round robin's %v on identical pods", p95["default"], p95["round-robin"])
	}
}

// At debug level every decision is logged with the pick and each endpoint's score from every
// scorer; at info level nothing is.
func TestScheduleDecisionLoggedAtDebug(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		at := plugintest.Epoch
		a := plugintest.Endpoint("10.0.0.1:8000", "m", 0, 2, 0.1, at)
		b := plugintest.Endpoint("10.0.0.2:8000", "m", 4, 20, 0.6, at)
		h := plugintest.NewHandle(a, b)
		cfg := scheduling.DefaultConfig()
		cfg.Now = h.Now
		var buf bytes.Buffer
		s, err := scheduling.New(cfg, h, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level})), nil)
		if err != nil {
			t.Fatal(err)
		}
		dispatch(t, s, 1)
		got := buf.String()
		if level == slog.LevelInfo {
			if strings.Contains(got, "schedule decision") {
				t.Fatalf("decision logged at info: %s", got)
			}
			continue
		}
		for _, want := range []string{"schedule decision", "prompt_tokens=1000", "picked=10.0.0.1:8000", "10.0.0.2:8000: ", "predicted-ttft-scorer=", "total="} {
			if !strings.Contains(got, want) {
				t.Errorf("log lacks %q: %s", want, got)
			}
		}
	}
}

// Under overload (bursts at 3x two identical pods' capacity) every pod's queue sits near the
// saturation threshold. Scoped to each pod, the threshold reads the scraped queue, so until the
// next scrape every request goes to the pod whose last scrape was under it, however much has been
// sent there since, and the tail grows. Scoped to the pool (the default profile), a pod over it
// stays a candidate while the other is under it, and the predicted TTFT, which counts what was
// sent since the scrape, places each request behind the least work. Both run with the scraped
// queue alone (countSentSinceScrape off), the case the scope is for.
func TestOverloadQueueLeftToPrediction(t *testing.T) {
	raw, err := scheduling.ProfileYAML(scheduling.ProfileDefault)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte("queueDepthScope: pool")) {
		t.Fatal("the default profile no longer scopes the queue depth to the pool")
	}
	raw = profileWith(t, raw, "countSentSinceScrape: true", "countSentSinceScrape: false")
	pool := filepath.Join(t.TempDir(), "pool.yaml")
	perPod := filepath.Join(t.TempDir(), "per-pod.yaml")
	if err := os.WriteFile(pool, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(
		perPod,
		profileWith(t, raw, "queueDepthScope: pool", "queueDepthScope: endpoint"),
		0o600,
	); err != nil {
		t.Fatal(err)
	}
	p99 := map[string]time.Duration{}
	for _, scope := range []string{"pool", "endpoint"} {
		file := pool
		if scope == "endpoint" {
			file = perPod
		}
		sm := newSimWith(t, file, []simProfile{simL40s, simL40s})
		sm.flow = true
		sm.run(11, 48, 32*time.Second, twoSecondBursts, 1) // 3x the pods' prefill capacity during bursts
		p99[scope] = sm.ttftPercentile(0.99)
		t.Logf(
			"queue depth per %-8s p50=%v p95=%v p99=%v done=%d",
			scope,
			sm.ttftPercentile(0.5),
			sm.ttftPercentile(0.95),
			p99[scope],
			len(sm.done),
		)
	}
	if p99["pool"] >= p99["endpoint"] {
		t.Errorf(
			"P99 TTFT under overload %v with the pool scope, want under the per-pod scope's %v",
			p99["pool"],
			p99["endpoint"],
		)
	}
}

// simL40s is an l40s-like pod for the overload simulations: 8,000 prefill tokens/s.
var simL40s = simProfile{prefill: 8000, itl: 25 * time.Millisecond, kv: 120000}

// twoSecondBursts is an arrival shape on for 2 s every 8 s.
func twoSecondBursts(now time.Duration) float64 {
	if now%(8*time.Second) < 2*time.Second {
		return 1
	}
	return 0
}

// newSimWith returns a simulation of fleet scheduled by the profile in file, or by the shipped
// default profile when file is "".
func newSimWith(t *testing.T, file string, fleet []simProfile) *sim {
	t.Helper()
	sm := newSim(t, scheduling.ProfileDefault, fleet)
	if file == "" {
		return sm
	}
	cfg := scheduling.DefaultConfig()
	cfg.ConfigFile, cfg.Now = file, sm.h.Now
	var err error
	if sm.s, err = scheduling.New(cfg, sm.h, nil, nil); err != nil {
		t.Fatal(err)
	}
	return sm
}

// profileWith returns the profile raw with old replaced by new, failing when old is not in it.
func profileWith(t *testing.T, raw []byte, old, new string) []byte {
	t.Helper()
	if !bytes.Contains(raw, []byte(old)) {
		t.Fatalf("the default profile no longer has %q", old)
	}
	return bytes.Replace(raw, []byte(old), []byte(new), 1)
}

// Under overload the front door's queue serves higher priorities first, but only what it holds:
// when a pod's saturation goes by the scraped queue alone, a scrape that shows room lets one
// dispatch pass send the whole queue to the pods, where it waits in arrival order whatever its
// priority. Counting what was sent since the scrape (the default profile) keeps the excess in the
// front door, so a critical request overtakes the sheddable ones there. Two identical pods, bursts
// at 3x their capacity, a fifth of the requests at the higher priority.
func TestOverloadPriorityServedFirst(t *testing.T) {
	raw, err := scheduling.ProfileYAML(scheduling.ProfileDefault)
	if err != nil {
		t.Fatal(err)
	}
	scraped := filepath.Join(t.TempDir(), "scraped.yaml")
	if err := os.WriteFile(
		scraped,
		profileWith(t, raw, "countSentSinceScrape: true", "countSentSinceScrape: false"),
		0o600,
	); err != nil {
		t.Fatal(err)
	}
	// The picker breaks ties at random, so single runs vary: pool eight seeds.
	var crit, all [2][]time.Duration
	for seed := uint64(1); seed <= 8; seed++ {
		for i, file := range []string{"", scraped} {
			sm := newSimWith(t, file, []simProfile{simL40s, simL40s})
			sm.flow, sm.critical = true, 0.2
			sm.run(seed, 48, 32*time.Second, twoSecondBursts, 1)
			for _, r := range sm.done {
				all[i] = append(all[i], r.ttft)
				if r.req.Priority == 1 {
					crit[i] = append(crit[i], r.ttft)
				}
			}
		}
	}
	p99 := func(ts []time.Duration) time.Duration {
		slices.Sort(ts)
		return ts[int(0.99*float64(len(ts)-1))]
	}
	c, cs, a, as := p99(crit[0]), p99(crit[1]), p99(all[0]), p99(all[1])
	t.Logf("critical P99 %v (scraped queue only: %v); all requests' P99 %v (%v)", c, cs, a, as)
	if float64(c) > 0.7*float64(cs) {
		t.Errorf("critical P99 %v, want under 70%% of the %v with the scraped queue only", c, cs)
	}
	if float64(a) > 1.1*float64(as) {
		t.Errorf("P99 of all requests %v, want within 10%% of the %v with the scraped queue only", a, as)
	}
}
