package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/loadgen"
)

// clusterRow is one cluster of `switchyardctl clusters -o json`.
type clusterRow struct {
	Name    string `json:"name"`
	Region  string `json:"region"`
	Healthy bool   `json:"healthy"`
	Stale   bool   `json:"stale"`
}

// listClusters returns the router's cluster table as switchyardctl prints it.
func listClusters(t *testing.T, w *world, router *node) []clusterRow {
	t.Helper()
	out, err := runCtl(w, router, "clusters", "-o", "json")
	if err != nil {
		t.Fatalf("switchyardctl clusters: %v\n%s", err, out)
	}
	var list struct {
		Clusters []clusterRow `json:"clusters"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("clusters -o json: %v\n%s", err, out)
	}
	return list.Clusters
}

// clusterNames returns the names of rows, sorted.
func clusterNames(rows []clusterRow) []string {
	names := make([]string, 0, len(rows))
	for _, r := range rows {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	return names
}

// waitClusters polls the router's cluster table until ok accepts it or timeout passes, and returns
// the last table and how long it took.
func waitClusters(
	t *testing.T,
	w *world,
	router *node,
	timeout time.Duration,
	ok func([]clusterRow) bool,
) ([]clusterRow, time.Duration, bool) {
	t.Helper()
	start := time.Now()
	var rows []clusterRow
	held := poll.Within(timeout, func() bool {
		rows = listClusters(t, w, router)
		return ok(rows)
	})
	return rows, time.Since(start), held
}

func hasCluster(name string) func([]clusterRow) bool {
	return func(rows []clusterRow) bool {
		return slices.ContainsFunc(rows, func(r clusterRow) bool { return r.Name == name && !r.Stale })
	}
}

// TestGossipWrongKeyRefused starts a gateway whose gossip keyring holds another key: the router
// must never list it nor route to it, while a gateway with the right key started after it joins.
func TestGossipWrongKeyRefused(t *testing.T) {
	w := newWorld(t)
	w.Gateway("east-good", "us-east-1", []string{w.Pod("h100").Listen})
	router := w.Router("us-east-1", "")

	wrongKey := w.Write("wrong.key", gossipKey())
	intruderPod := w.Pod("h100")
	intruderStart := time.Now()
	// It joins through the router itself (a later flag wins).
	intruder := w.Gateway("east-intruder", "us-east-1", []string{intruderPod.Listen},
		"--gossip-key-file="+wrongKey, "--gossip-join="+router.Gossip)
	// A gateway with the right key, started after the intruder: it must show up, which bounds how
	// long the intruder had to show up too.
	late := w.Gateway("east-late", "us-east-1", []string{w.Pod("h100").Listen})
	_, joined, ok := waitClusters(t, w, router, 30*time.Second, hasCluster("east-late"))
	if !ok {
		t.Fatalf("a gateway with the right key did not join within 30 s\n%s", late.Log())
	}

	l := startLoad(t, "http://"+router.Listen, 6, 8*time.Second, 30)
	// Watch the table while the load runs: the intruder must not appear at any time.
	var seen [][]string
	for time.Since(l.started) < 8*time.Second {
		rows := listClusters(t, w, router)
		names := clusterNames(rows)
		if slices.Contains(names, "east-intruder") {
			t.Errorf("router lists the gateway with the wrong key: %v\n%s", names, router.Log())
		}
		if len(seen) == 0 || !slices.Equal(seen[len(seen)-1], names) {
			seen = append(seen, names)
		}
		time.Sleep(500 * time.Millisecond)
	}
	members, err := runCtl(w, router, "members", "-o", "json")
	if err != nil {
		t.Fatalf("switchyardctl members: %v\n%s", err, members)
	}
	if strings.Contains(members, "east-intruder") || strings.Contains(members, intruder.Gossip) {
		t.Errorf("the gateway with the wrong key is a gossip member of the router:\n%s", members)
	}
	// The refusal is the keyring's, not a join that was never tried.
	joinFailed := metricValue(t, intruder.Metrics, "switchyard_gossip_join_attempts_total", "result=failed")
	joinOK := metricValue(t, intruder.Metrics, "switchyard_gossip_join_attempts_total", "result=ok")
	if joinFailed == 0 || joinOK != 0 {
		t.Errorf(
			"gateway with the wrong key: %g failed and %g successful join attempts; want failures only\n%s",
			joinFailed,
			joinOK,
			intruder.Log(),
		)
	}
	samples := l.wait(t)
	o := count(samples)
	t.Logf("outcomes: %s", o)
	if n := o.Clusters["east-intruder"]; n > 0 {
		t.Errorf("%d requests were routed to the gateway with the wrong key", n)
	}
	if o.Lost != 0 || o.OK < o.Total*9/10 {
		t.Errorf("load through the router suffered: %s", o)
	}
	t.Logf(
		"FIGURES gossip-wrong-key: right-key gateway listed after %s; wrong-key gateway listed never (watched %s after its start); "+
			"its join attempts failed %g ok %g; requests %d ok %d lost %d, to wrong-key gateway %d; tables seen %v",
		joined.Round(
			time.Millisecond,
		),
		time.Since(intruderStart).Round(time.Second),
		joinFailed,
		joinOK,
		o.Total,
		o.OK,
		o.Lost,
		o.Clusters["east-intruder"],
		seen,
	)
}

// flapWindow is one outage of the flapping gateway, from the start of the load run.
type flapWindow struct{ down, up time.Duration }

// TestGossipFlappingGatewayDamped kills and restarts the gateway of a router's only local cluster
// every 2.5 s (down 1 s, up 1.5 s) while steady load runs through the router: no request may be
// lost, the two stable clusters of the next region carry most of the load, and the flapping
// cluster gets only a small share while it flaps, rather than all the traffic each time it is
// briefly up.
func TestGossipFlappingGatewayDamped(t *testing.T) {
	w := newWorld(t)
	// The flapping cluster is the router's only local one, the stable ones are in another region
	// 30 ms away: local first, routing wants the flapping cluster whenever it is up, so undamped
	// each of its brief returns pulls the traffic back to it.
	w.Gateway("west-a", "us-west-2", []string{w.Pod("h100").Listen})
	router := w.Router("us-east-1", "", "--simulated-rtt=us-west-2=30ms")
	w.Gateway("west-b", "us-west-2", []string{w.Pod("h100").Listen})
	flap := w.Gateway("east-flap", "us-east-1", []string{w.Pod("h100").Listen})
	if _, _, ok := waitClusters(t, w, router, 30*time.Second, func(rows []clusterRow) bool {
		return hasCluster("west-a")(rows) && hasCluster("west-b")(rows) && hasCluster("east-flap")(rows)
	}); !ok {
		t.Fatalf("the router did not list the three clusters within 30 s\n%s", router.Log())
	}

	const (
		warm     = 5 * time.Second  // every cluster up: the local one takes the traffic
		flapFor  = 16 * time.Second // then it flaps
		settle   = 4 * time.Second
		rate     = 8.0
		downTime = time.Second
		upTime   = 1500 * time.Millisecond
	)
	l := startLoad(t, "http://"+router.Listen, rate, warm+flapFor+settle, 40)
	time.Sleep(time.Until(l.started.Add(warm)))
	var flaps []flapWindow
	for time.Since(l.started) < warm+flapFor {
		down := time.Since(l.started)
		flap.Kill()
		time.Sleep(downTime)
		if err := flap.Start(); err != nil {
			t.Fatalf("restart flapping gateway: %v", err)
		}
		flaps = append(flaps, flapWindow{down: down, up: time.Since(l.started)})
		time.Sleep(upTime)
	}
	flapEnd := time.Since(l.started)
	samples := l.wait(t)
	o := count(samples)
	t.Logf("outcomes: %s", o)

	before := servedBetween(samples, 0, warm)
	during := servedBetween(samples, warm, flapEnd)
	mid := warm + (flapEnd-warm)/2
	early, late := servedBetween(samples, warm, mid), servedBetween(samples, mid, flapEnd)
	up := servedWhileUp(samples, flaps)
	share := func(m map[string]int, c string) float64 {
		total := 0
		for _, n := range m {
			total += n
		}
		if total == 0 {
			return 0
		}
		return float64(m[c]) / float64(total)
	}
	switches := routeSwitches(samples, warm, flapEnd, "east-flap")
	back := "not within the run"
	lastUp := flaps[len(flaps)-1].up
	if first := firstSentTo(samples, lastUp, "east-flap"); first >= 0 {
		back = (first - lastUp).Round(100 * time.Millisecond).String()
	}
	t.Logf(
		"FIGURES gossip-flap: %d flaps (down %s, up %s); flapping cluster share before %.2f, while flapping %.2f (first half %.2f, second half %.2f; %.2f of requests sent while it was up); "+
			"its traffic switched on/off %d times in 500 ms buckets; it served again %s after the last restart; requests %d ok %d lost %d cut %d shed %d",
		len(flaps),
		downTime,
		upTime,
		share(before, "east-flap"),
		share(during, "east-flap"),
		share(early, "east-flap"),
		share(late, "east-flap"),
		share(up, "east-flap"),
		switches,
		back,
		o.Total,
		o.OK,
		o.Lost,
		o.Cut,
		o.Shed,
	)

	if o.Lost != 0 {
		t.Errorf("%d requests lost; want 0\n%s", o.Lost, router.Log())
	}
	if o.OK < o.Total*9/10 {
		t.Errorf("only %d of %d requests succeeded\n%s", o.OK, o.Total, router.Log())
	}
	// Local first: before it flaps the flapping cluster takes (nearly) everything. Undamped, it
	// would take everything again each time it is briefly up, and the traffic would swing back
	// and forth between the regions with every flap.
	if s := share(before, "east-flap"); s < 0.5 {
		t.Fatalf(
			"the local cluster got only %.2f of the requests before it flapped (%v): the scenario did not set up",
			s,
			before,
		)
	}
	if s := share(up, "east-flap"); s >= 0.5 {
		t.Errorf("flapping cluster got %.2f of the requests sent while it was up (%v); want less than half", s, up)
	}
	if s := share(during, "east-flap"); s > 0.25 {
		t.Errorf("flapping cluster got %.2f of the requests while flapping (%v); want at most 0.25", s, during)
	}
	if during["west-a"]+during["west-b"] <= during["east-flap"] {
		t.Errorf("the stable clusters did not carry most of the load while the other flapped: %v", during)
	}
}

// servedBetween counts successful requests sent in [from, to) by the cluster that served them.
func servedBetween(samples []loadgen.Sample, from, to time.Duration) map[string]int {
	out := map[string]int{}
	for i := range samples {
		if s := &samples[i]; s.OK() && s.Sent >= from && s.Sent < to {
			out[s.Cluster]++
		}
	}
	return out
}

// firstSentTo returns the send time of the first successful request sent at or after from and
// served by cluster, or -1.
func firstSentTo(samples []loadgen.Sample, from time.Duration, cluster string) time.Duration {
	first := time.Duration(-1)
	for i := range samples {
		if s := &samples[i]; s.OK() && s.Cluster == cluster && s.Sent >= from && (first < 0 || s.Sent < first) {
			first = s.Sent
		}
	}
	return first
}

// servedWhileUp counts successful requests sent while the flapping gateway was up between flaps.
func servedWhileUp(samples []loadgen.Sample, flaps []flapWindow) map[string]int {
	out := map[string]int{}
	for k := 0; k+1 < len(flaps); k++ {
		for c, n := range servedBetween(samples, flaps[k].up, flaps[k+1].down) {
			out[c] += n
		}
	}
	return out
}

// routeSwitches counts how often, in 500 ms buckets between from and to, cluster went from
// serving some of the bucket's requests to none or back: how much routing to it oscillates.
func routeSwitches(samples []loadgen.Sample, from, to time.Duration, cluster string) int {
	const bucket = 500 * time.Millisecond
	n := int((to - from) / bucket)
	if n <= 0 {
		return 0
	}
	got := make([]bool, n)
	for i := range samples {
		s := &samples[i]
		if k := int((s.Sent - from) / bucket); s.OK() && s.Cluster == cluster && s.Sent >= from && k < n {
			got[k] = true
		}
	}
	switches := 0
	for k := 1; k < n; k++ {
		if got[k] != got[k-1] {
			switches++
		}
	}
	return switches
}

// gossipKey returns a fresh base64 gossip key.
func gossipKey() string {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return base64.StdEncoding.EncodeToString(k)
}
