package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
	"github.com/switchyard-dev/switchyard/tests/loadgen"
)

// TestGatewayKilledMidLoad kills the only gateway of one of two local clusters while steady load
// runs through a router, then restarts it. The router must stop sending to the dead cluster within
// 2 s on its own passive health (gossip would take longer to call the gateway dead), retry every
// request that had not started on the other cluster (none lost), and send traffic back once the
// gateway is up again, without dumping the whole load on it at once.
func TestGatewayKilledMidLoad(t *testing.T) {
	w := newWorld(t)
	w.TimeScale = 0.5
	// The gossip seed is a gateway of its own over a pod of another model, which takes none of
	// the test's traffic and is never killed: every later node joins through it, so the
	// restarted victim finds the pool again, whichever of the two clusters it is.
	w.Gateway("seed", "us-east-1", []string{w.Pod("h100", "--model=seed-model").Listen})
	podA, podB := w.Pod("h100"), w.Pod("h100")
	gws := map[string]*node{
		"east-a": w.Gateway("east-a", "us-east-1", []string{podA.Listen}),
		"east-b": w.Gateway("east-b", "us-east-1", []string{podB.Listen}),
	}
	router := w.Router("us-east-1", "")
	waitRouterKnows(t, w, router, "east-a", "east-b")

	const (
		killAt    = 6 * time.Second
		restartAt = 12 * time.Second
		runFor    = 26 * time.Second
	)
	l := startLoad(t, "http://"+router.Listen, 12, runFor, 120)
	time.Sleep(time.Until(l.started.Add(killAt)))
	// Kill the cluster that has served more so far: the one whose loss the router must absorb.
	name := "east-a"
	if metricValue(t, gws["east-b"].Metrics, "switchyard_gateway_requests_total") >
		metricValue(t, gws["east-a"].Metrics, "switchyard_gateway_requests_total") {
		name = "east-b"
	}
	victim, other := gws[name], map[string]string{"east-a": "east-b", "east-b": "east-a"}[name]
	killed := time.Since(l.started)
	victim.Kill()
	t.Logf("gateway %s killed at %s", name, killed.Round(time.Millisecond))

	time.Sleep(time.Until(l.started.Add(restartAt)))
	if err := victim.Start(); err != nil {
		t.Fatalf("restart %s: %v", name, err)
	}
	restarted := time.Since(l.started)
	t.Logf("gateway %s healthy again at %s", name, restarted.Round(time.Millisecond))

	samples := l.wait(t)
	o := count(samples)
	t.Logf("outcomes: %s", o)
	tl := clusterTimeline(samples, name, killed, restarted)
	t.Logf(
		"FIGURES gateway-kill: last request that tried the dead gateway sent %s after the kill (%d retried onto %s); "+
			"lost %d, cut mid-stream %d of %d; %s served again %s after its restart; its share: %.0f%% before the kill, "+
			"%.0f%% in the first 2 s after the restart, %.0f%% from 6 s after it to the end",
		tl.lastTry.Round(
			time.Millisecond,
		),
		tl.retried,
		other,
		o.Lost,
		o.Cut,
		o.Total,
		name,
		tl.backAfter.Round(time.Millisecond),
		100*tl.steadyShare,
		100*tl.firstShare,
		100*tl.lateShare,
	)

	if o.Lost != 0 {
		t.Errorf("%d requests lost (failed before their first token); want 0\n%s", o.Lost, router.Log())
	}
	if o.OK < o.Total*8/10 {
		t.Errorf("only %d of %d requests succeeded", o.OK, o.Total)
	}
	// The headline is 2 s; allow for a loaded machine.
	if tl.lastTry > 4*time.Second {
		t.Errorf("the router still sent to the dead gateway %s after the kill, want within 2 s (4 s allowed)", tl.lastTry)
	}
	if tl.steadyShare == 0 {
		t.Fatalf("%s served nothing before the kill", name)
	}
	if tl.backAfter < 0 || tl.backAfter > 10*time.Second {
		t.Fatalf("%s did not get traffic within 10 s of its restart (back after %s)", name, tl.backAfter)
	}
	// Slow start: the returning cluster is offered 10% of the requests at first, all of them
	// after 5 s; without it, the emptiest cluster takes more than its share at once.
	if tl.lateShare < 0.15 {
		t.Errorf("%s's share from 6 s after its restart is %.0f%%, want its traffic back", name, 100*tl.lateShare)
	}
	if tl.firstShare >= tl.lateShare {
		t.Errorf(
			"%s took %.0f%% of the traffic in the first 2 s after its restart, not less than its %.0f%% later: no gradual return",
			name,
			100*tl.firstShare,
			100*tl.lateShare,
		)
	}
}

// TestRegionCutOff puts a TCP fault proxy between a router (in us-east-1, with no cluster of its
// own) and the only gateway of us-west-2, advertised to the router through the proxy, while two
// clusters of eu-west-1 are reached directly. Under steady load the link to us-west-2 first gets
// 400 ms of latency, then is cut (every byte dropped both ways, as a network partition does), then
// heals. While it is cut no request that had not started may be lost, the traffic must move to
// eu-west-1 without piling onto one of its two clusters, and after the heal us-west-2 must get
// traffic again. Gossip is UDP and does not go through the proxy: the router keeps hearing fresh
// summaries from us-west-2 during the cut, so only its passive health steers around it.
func TestRegionCutOff(t *testing.T) {
	w := newWorld(t)
	w.TimeScale = 0.5
	// us-west-2 has the faster GPU, so the router prefers it while its link is healthy and the
	// cut hits requests in flight on it (with equal pods its share rests on estimate noise).
	pods := []*node{w.Pod("a10g"), w.Pod("a10g"), w.Pod("h100")}
	w.Gateway("eu-a", "eu-west-1", []string{pods[0].Listen})
	w.Gateway("eu-b", "eu-west-1", []string{pods[1].Listen})
	link := w.Proxy("us-west-2", "127.0.0.1:1") // pointed at the gateway once it listens
	west := w.Gateway("west-a", "us-west-2", []string{pods[2].Listen}, "--advertise-url=http://"+link.Listen)
	if err := link.Update(&toxiproxy.Proxy{Listen: link.Listen, Upstream: west.Listen, Enabled: true}); err != nil {
		t.Fatalf("point the fault proxy at west-a: %v", err)
	}
	router := w.Router("us-east-1", "")
	waitRouterKnows(t, w, router, "eu-a", "eu-b", "west-a")

	// The latency ends 12 s before the cut: the router's slow measurement of the link fades
	// (about 7 s), a probe measures it fast again and west-a gets its share back, so the cut
	// catches requests in flight on it. (Cut straight after the latency, the router has already
	// steered around the slow link and sends it at most a probe, so whether any request is
	// caught is chance.)
	const (
		slowAt = 6 * time.Second
		fastAt = 12 * time.Second
		cutAt  = 24 * time.Second
		healAt = 32 * time.Second
		runFor = 48 * time.Second
	)
	l := startLoad(t, "http://"+router.Listen, 8, runFor, 100)
	at := func(d time.Duration) time.Duration {
		time.Sleep(time.Until(l.started.Add(d)))
		return time.Since(l.started)
	}
	slowed := at(slowAt)
	addToxic(t, link, "latency", "downstream", `{"latency":400}`)
	fast := at(fastAt)
	if err := link.Toxics.RemoveToxic(context.Background(), "latency_downstream"); err != nil {
		t.Fatalf("remove the latency: %v", err)
	}
	cut := at(cutAt)
	addToxic(t, link, "timeout", "downstream", `{"timeout":0}`)
	addToxic(t, link, "timeout", "upstream", `{"timeout":0}`)
	// Attempts are counted when they end: by 5 s after the cut every request caught on the
	// link (sent before the router ejected west-a, 2 s after the cut) has failed, and what tries
	// west-a from then on are probes.
	at(cutAt + 5*time.Second)
	attempts := func(labels ...string) float64 {
		return metricValue(t, router.Metrics, "switchyard_router_attempts_total", labels...)
	}
	probesFrom, refusedFrom := attempts("cluster=west-a"), attempts("result=refused")
	healed := at(healAt)
	probes, refused := attempts("cluster=west-a")-probesFrom, attempts("result=refused")-refusedFrom
	for _, name := range []string{"timeout_upstream", "timeout_downstream"} {
		if err := link.Toxics.RemoveToxic(context.Background(), name); err != nil {
			t.Fatalf("remove toxic %s: %v", name, err)
		}
	}
	t.Logf("link to us-west-2: +400 ms at %s, fast again at %s, cut at %s, healed at %s", slowed.Round(time.Millisecond),
		fast.Round(time.Millisecond), cut.Round(time.Millisecond), healed.Round(time.Millisecond))

	samples := l.wait(t)
	o := count(samples)
	t.Logf("outcomes: %s", o)
	tl := clusterTimeline(samples, "west-a", cut, healed)
	during := servedAfterUntil(samples, cut+2*time.Second, healed)
	f := cutFigures(samples, cut, healed)
	before := clusterShare(samples, "west-a", 0, slowed)
	// The first answers over the slow link measure it; from then on its share is what counts.
	slow := clusterShare(samples, "west-a", slowed+2*time.Second, fast)
	regained := clusterShare(samples, "west-a", fast+2*time.Second, cut)
	t.Logf(
		"FIGURES region-cut: west-a share %.0f%% before, %.0f%% under +400 ms, %.0f%% once fast again; %d requests caught on the cut link "+
			"were moved to another cluster, the slowest after %s (first token); from 3 s after the cut to the heal %.0f%% "+
			"of requests were retried; from 5 s after the cut to the heal %.0f attempts probed west-a and %.0f were refused "+
			"(a full cluster's 429 or 503); slowest first token of any request sent during the cut %s; served during "+
			"the cut: %s; lost %d, cut mid-stream %d of %d; west-a served again %s after the heal; gossip (UDP) was not cut",
		100*before,
		100*slow,
		100*regained,
		f.moved,
		f.slowestMoved.Round(time.Millisecond),
		100*f.probed,
		probes,
		refused,
		f.slowest.Round(time.Millisecond),
		fmtClusterShares(during),
		o.Lost,
		o.Cut,
		o.Total,
		tl.backAfter.Round(time.Millisecond),
	)

	if o.Lost != 0 {
		t.Errorf("%d requests lost (failed before their first token); want 0\n%s", o.Lost, router.Log())
	}
	if o.OK < o.Total*8/10 {
		t.Errorf("only %d of %d requests succeeded", o.OK, o.Total)
	}
	// Under +400 ms the round trips measured on its answers put west-a behind eu-west-1 (its
	// faster GPU gains less than the link costs): its share falls (88-94% before, 9-15% under
	// latency measured). Gossip's coordinates, on UDP that the proxy does not delay, cannot
	// see the latency.
	if before >= 0.3 && slow > before/2 {
		t.Errorf("west-a's share went from %.0f%% before to %.0f%% under +400 ms: the slow link was not steered around",
			100*before, 100*slow)
	}
	if during["west-a"] != 0 {
		t.Errorf("west-a served %d requests sent while its link was cut", during["west-a"])
	}
	// A request caught on the cut link waits for 1 s of silence and a 1 s ping timeout (the
	// headline 2 s), then is retried; without the ping it would wait for the heal.
	if f.moved == 0 {
		t.Errorf("no request was caught on the cut link and retried: the fault was not exercised")
	}
	if f.slowestMoved > 5*time.Second {
		t.Errorf(
			"a request caught on the cut link got its first token after %s, want it moved within 2 s (5 s allowed)",
			f.slowestMoved,
		)
	}
	// Not asserted: the attempts on west-a from 5 s after the cut (half-open probes of the
	// ejected cluster, one at a time; 1 measured).
	// No herd: both eu-west-1 clusters take a real part of the rerouted traffic (their split
	// follows their estimates; a herd is all of it on one). The requests caught on the cut are
	// retried where the router then estimates best, each counting for the next. When they all
	// retried at the fallback chosen on their arrival, that cluster's gateway learnt its pod as
	// slow from the batch, and the split was 14/85 to 90/9 (under 10% in three of six runs);
	// retried as now, 41/58 to 75/24 in seven runs.
	if n := during["eu-a"] + during["eu-b"]; n == 0 || during["eu-a"]*10 < n || during["eu-b"]*10 < n {
		t.Errorf("during the cut eu-west-1 served %v: want each of its clusters to take at least 10%%", during)
	}
	// The ejection running at the heal (its backoff doubled on each failed probe: up to 8 s after
	// an 8 s cut), then a probe, then slow start.
	if tl.backAfter < 0 || tl.backAfter > 15*time.Second {
		t.Errorf("west-a got no traffic within 15 s of the heal (back after %s)", tl.backAfter)
	}
}

// cutOutcome is how requests fared while a link was cut.
type cutOutcome struct {
	// moved counts the successful requests sent from 2 s before the cut to the heal that were
	// retried (their first attempt went to the cut link), and slowestMoved is the longest time to
	// first token among them.
	moved        int
	slowestMoved time.Duration
	// probed is the fraction of the requests sent from 3 s after the cut to the heal that were
	// retried (their first attempt went to the cut link).
	probed float64
	// slowest is the longest time to first token of a successful request sent during the cut.
	slowest time.Duration
}

func cutFigures(samples []loadgen.Sample, cut, healed time.Duration) cutOutcome {
	var r cutOutcome
	n, retried := 0, 0
	for i := range samples {
		s := &samples[i]
		if s.OK() && s.Route == "retry" && s.Sent >= cut-2*time.Second && s.Sent < healed {
			r.moved++
			r.slowestMoved = max(r.slowestMoved, s.TTFT)
		}
		if s.OK() && s.Sent >= cut && s.Sent < healed {
			r.slowest = max(r.slowest, s.TTFT)
		}
		if s.Sent >= cut+3*time.Second && s.Sent < healed {
			n++
			if s.Route == "retry" {
				retried++
			}
		}
	}
	if n > 0 {
		r.probed = float64(retried) / float64(n)
	}
	return r
}

// servedAfterUntil counts successful requests sent in [from, to) by the cluster that served them.
func servedAfterUntil(samples []loadgen.Sample, from, to time.Duration) map[string]int {
	out := map[string]int{}
	for i := range samples {
		s := &samples[i]
		if s.OK() && s.Sent >= from && s.Sent < to {
			out[s.Cluster]++
		}
	}
	return out
}

// faultTimeline is how one cluster fared around a kill and a restart, from a run's samples.
type faultTimeline struct {
	// lastTry is the time from the kill to the last request that tried the cluster: served by it,
	// or answered with route retry (its first attempt failed).
	lastTry time.Duration
	// retried counts requests sent after the kill with route retry.
	retried int
	// backAfter is the time from the restart to the first request it served again (-1: never).
	backAfter time.Duration
	// steadyShare is its share of the successful requests sent before the kill,
	// firstShare in the 2 s after the restart (or heal), lateShare from 6 s after it to the end.
	steadyShare, firstShare, lateShare float64
}

func clusterTimeline(samples []loadgen.Sample, cluster string, killed, restarted time.Duration) faultTimeline {
	tl := faultTimeline{backAfter: -1}
	var end time.Duration
	for i := range samples {
		s := &samples[i]
		end = max(end, s.Sent)
		if s.Sent < killed {
			continue
		}
		if s.Route == "retry" || (s.Cluster == cluster && s.Sent < restarted) {
			tl.lastTry = max(tl.lastTry, s.Sent-killed)
		}
		if s.Route == "retry" && s.Sent < restarted {
			tl.retried++
		}
		if s.OK() && s.Cluster == cluster && s.Sent >= restarted && (tl.backAfter < 0 || s.Sent-restarted < tl.backAfter) {
			tl.backAfter = s.Sent - restarted
		}
	}
	tl.steadyShare = clusterShare(samples, cluster, 0, killed)
	tl.firstShare = clusterShare(samples, cluster, restarted, restarted+2*time.Second)
	tl.lateShare = clusterShare(samples, cluster, restarted+6*time.Second, end+time.Nanosecond)
	return tl
}

// clusterShare is cluster's share of the successful requests sent in [from, to).
func clusterShare(samples []loadgen.Sample, cluster string, from, to time.Duration) float64 {
	n, mine := 0, 0
	for i := range samples {
		s := &samples[i]
		if !s.OK() || s.Sent < from || s.Sent >= to {
			continue
		}
		n++
		if s.Cluster == cluster {
			mine++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(mine) / float64(n)
}

// waitRouterKnows polls the router's admin API until every named cluster is listed fresh and
// healthy with a gateway URL, so that the load starts with the whole topology known to the router
// (gossip takes a moment).
func waitRouterKnows(t *testing.T, w *world, router *node, clusters ...string) {
	t.Helper()
	poll.UntilState(t, 60*time.Second, func() (bool, string) {
		out, err := exec.Command(filepath.Join(binDir, "switchyardctl"), "--addr=http://"+router.Admin,
			"--token-file="+w.TokenFile, "clusters", "-o", "json").CombinedOutput()
		var list struct {
			Clusters []struct {
				Name    string   `json:"name"`
				Healthy bool     `json:"healthy"`
				Stale   bool     `json:"stale"`
				URLs    []string `json:"gateway_urls"`
			} `json:"clusters"`
		}
		ready := map[string]bool{}
		if err == nil && json.Unmarshal(out, &list) == nil {
			for _, c := range list.Clusters {
				ready[c.Name] = c.Healthy && !c.Stale && len(c.URLs) > 0
			}
		}
		// A gateway's first summaries, published before it has read what its pods serve, list
		// no model: the router must also see each cluster serving before load starts.
		serving := harness.ServingClusters(context.Background(), "http://"+router.Admin, w.Token())
		return len(notReady(ready, clusters)) == 0 && len(notReady(serving, clusters)) == 0, string(out)
	}, fmt.Sprintf("clusters %v fresh, healthy and serving on the router", clusters))
}

func notReady(seen map[string]bool, want []string) []string {
	var out []string
	for _, c := range want {
		if !seen[c] {
			out = append(out, c)
		}
	}
	return out
}

// fmtClusterShares prints each cluster's share of a count map, in name order.
func fmtClusterShares(m map[string]int) string {
	total := 0
	for _, v := range m {
		total += v
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d%%", k, 100*m[k]/max(total, 1)))
	}
	return strings.Join(parts, ", ")
}
