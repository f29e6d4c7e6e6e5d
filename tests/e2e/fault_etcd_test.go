package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
	"github.com/switchyard-dev/switchyard/tests/loadgen"
)

// TestEtcdOutage runs real etcd servers (separate processes) under two routers and takes them
// away while steady load runs: first every member of a one-member cluster, then the leader of a
// three-member cluster.
func TestEtcdOutage(t *testing.T) {
	bin := etcdBinary(t, t.TempDir())
	t.Run("all members stopped", func(t *testing.T) { etcdAllMembersStopped(t, bin) })
	t.Run("leader of three killed", func(t *testing.T) { etcdLeaderKilled(t, bin) })
}

// etcdAllMembersStopped stores a drain and a data-residency policy, then kills the only etcd
// member for ten seconds while load runs through both routers and a writer keeps writing: routing
// goes on with the last configuration, admin writes are refused, and once etcd is back
// from its data directory every acknowledged write is there and new writes apply again.
func etcdAllMembersStopped(t *testing.T, bin string) {
	etcd := startEtcd(t, bin, t.TempDir(), 1) // before the world: stopped after its routers
	w := newWorld(t)
	w.Gateway("east-a", "us-east-1", []string{w.Pod("h100").Listen})
	w.Gateway("east-b", "us-east-1", []string{w.Pod("h100").Listen})
	w.Gateway("west-a", "us-west-2", []string{w.Pod("h100").Listen})
	east := w.Router("us-east-1", etcd.Endpoints())
	west := w.Router("us-west-2", etcd.Endpoints())
	if _, _, ok := waitClusters(t, w, east, 30*time.Second, func(rows []clusterRow) bool {
		return hasCluster("east-a")(rows) && hasCluster("east-b")(rows) && hasCluster("west-a")(rows)
	}); !ok {
		t.Fatalf("the router did not list the three clusters within 30 s\n%s", east.Log())
	}

	// The configuration routing must keep through the outage: east-b drained, and test-model
	// kept in us-east-1, so that both routers send everything to east-a.
	mustRunCtl(t, w, east, "drain", "east-b")
	mustRunCtl(t, w, west, "policy", "put", "--model="+testModel, "--allowed-regions=us-east-1")
	for _, r := range []*node{east, west} {
		waitServedBy(t, r, "east-a", 10*time.Second)
	}

	const (
		killAt  = 5 * time.Second
		outage  = 10 * time.Second
		runTime = 24 * time.Second
	)
	le := startLoad(t, "http://"+east.Listen, 4, runTime, 30)
	lw := startLoad(t, "http://"+west.Listen, 3, runTime, 30)
	wr := startWriter(w, east, "pre")
	time.Sleep(time.Until(le.started.Add(killAt)))
	etcd.members[0].Kill()
	killed := time.Since(wr.started)
	t.Logf("etcd killed at %s", time.Since(le.started).Round(time.Millisecond))

	// An admin write during the outage, with room for the router's own bound on etcd calls.
	time.Sleep(time.Second)
	start := time.Now()
	out, err := runCtl(w, west, "undrain", "east-b", "--timeout=30s")
	failIn := time.Since(start)
	// The contract is UNAVAILABLE (retryable), answered within the router's own bound on etcd
	// calls; a write that succeeds, hangs past its bound or fails otherwise is not.
	code := ctlCode(out)
	if err == nil || code != "UNAVAILABLE" || failIn > 20*time.Second {
		t.Errorf(
			"admin write while etcd is down: err %v after %s, output %q; want a failure with code UNAVAILABLE",
			err,
			failIn,
			strings.TrimSpace(out),
		)
	}
	drainedThrough := hasDrained(t, w, east, "east-b") && hasDrained(t, w, west, "east-b")
	if !drainedThrough {
		t.Errorf("east-b no longer listed as drained while etcd is down")
	}

	time.Sleep(time.Until(le.started.Add(killAt + outage)))
	if err := etcd.members[0].Restart(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Since(wr.started)
	back, err := waitWrite(w, east, "after-outage", 30*time.Second)
	if err != nil {
		t.Errorf("admin writes after etcd came back: %v", err)
	}
	writes := wr.Stop()
	se, sw := le.wait(t), lw.wait(t)

	stored := storedPolicies(t, w, west)
	if missing := missingWrites(stored, writes); len(missing) > 0 {
		t.Errorf("%d acknowledged writes missing after the outage: %v", len(missing), missing)
	}
	if _, ok := stored[testModel]; !ok {
		t.Errorf("the policy of %s stored before the outage is gone", testModel)
	}
	oe, ow := count(se), count(sw)
	t.Logf("east router: %s", oe)
	t.Logf("west router: %s", ow)
	for name, o := range map[string]outcomes{"east": oe, "west": ow} {
		if o.Lost != 0 || o.OK < o.Total*9/10 {
			t.Errorf("%s router: routing suffered from the etcd outage: %s", name, o)
		}
		if len(o.Clusters) != 1 || o.Clusters["east-a"] == 0 {
			t.Errorf("%s router: served by %v; the drain and the policy allow only east-a", name, o.Clusters)
		}
	}
	during := servedBetween(se, killAt, killAt+outage)
	duringW := servedBetween(sw, killAt, killAt+outage)

	// The watch resumes: a change written after the outage reaches both routers.
	mustRunCtl(t, w, west, "undrain", "east-b")
	for _, r := range []*node{east, west} {
		if !poll.Within(10*time.Second, func() bool { return !hasDrained(t, w, r, "east-b") }) {
			t.Errorf("router %s did not apply an undrain written after the outage within 10 s", r.Name())
		}
	}

	a := acked(writes)
	before, failed := 0, 0
	for _, x := range writes {
		switch {
		case x.out == "" && x.at+x.dur <= killed:
			before++
		case x.out != "" && x.at >= killed && x.at+x.dur <= restarted:
			failed++
		}
	}
	t.Logf(
		"FIGURES etcd-outage: etcd down %s; requests during the outage served east %d west %d (lost east %d west %d of %d/%d total); "+
			"admin write during the outage failed in %s with %s (%s); writes acknowledged %d (%d before the kill), failed during the outage %d, missing after restart %d; "+
			"first write acknowledged %s after etcd restarted",
		(restarted - killed).Round(
			100*time.Millisecond,
		),
		sumCounts(during),
		sumCounts(duringW),
		oe.Lost,
		ow.Lost,
		oe.Total,
		ow.Total,
		failIn.Round(
			10*time.Millisecond,
		),
		code,
		ctlMessage(out),
		len(a),
		before,
		failed,
		len(missingWrites(stored, writes)),
		back.Round(10*time.Millisecond),
	)
}

// etcdLeaderKilled kills the raft leader of a three-member etcd cluster while load runs through
// one router and writers write through both: admin writes succeed again within a few seconds,
// routing never stops, and every acknowledged write is stored.
func etcdLeaderKilled(t *testing.T, bin string) {
	etcd := startEtcd(t, bin, t.TempDir(), 3) // before the world: stopped after its routers
	w := newWorld(t)
	w.Gateway("east-a", "us-east-1", []string{w.Pod("h100").Listen})
	w.Gateway("east-b", "us-east-1", []string{w.Pod("h100").Listen})
	r1 := w.Router("us-east-1", etcd.Endpoints())
	r2 := w.Router("us-east-1", etcd.Endpoints())

	const (
		killAt  = 5 * time.Second
		runTime = 15 * time.Second
	)
	// A router is ready once it knows one fresh cluster, which may not list the model yet.
	waitRouterKnows(t, w, r1, "east-a", "east-b")
	l := startLoad(t, "http://"+r1.Listen, 5, runTime, 30)
	w1, w2 := startWriter(w, r1, "r1"), startWriter(w, r2, "r2")
	time.Sleep(time.Until(l.started.Add(killAt)))
	leader := etcd.Leader(t)
	if leader == nil {
		t.Fatal("no etcd member reports itself leader")
	}
	leader.Kill()
	killed1, killed2 := time.Since(w1.started), time.Since(w2.started)
	t.Logf("etcd leader %s killed at %s", leader.name, time.Since(l.started).Round(time.Millisecond))
	time.Sleep(time.Until(l.started.Add(runTime - 2*time.Second)))
	writes1, writes2 := w1.Stop(), w2.Stop()
	samples := l.wait(t)

	var newLeader *etcdMember
	poll.Within(10*time.Second, func() bool { newLeader = etcd.Leader(t); return newLeader != nil })
	if newLeader == nil || newLeader == leader {
		t.Errorf("no new etcd leader after the kill (got %v)", newLeader)
	}
	stored := storedPolicies(t, w, r2)
	missing := append(missingWrites(stored, writes1), missingWrites(stored, writes2)...)
	if len(missing) > 0 {
		t.Errorf("%d acknowledged writes missing after the leader was killed: %v", len(missing), missing)
	}
	rec1, gap1, fail1 := recovery(writes1, killed1)
	rec2, gap2, fail2 := recovery(writes2, killed2)
	for i, rec := range []time.Duration{rec1, rec2} {
		if rec < 0 || rec > 10*time.Second {
			t.Errorf("router %d: no write acknowledged within 10 s of the leader's death (%s)", i+1, rec)
		}
	}
	o := count(samples)
	t.Logf("outcomes: %s", o)
	if o.Lost != 0 || o.OK < o.Total*9/10 {
		t.Errorf("routing suffered from the leader's death: %s", o)
	}
	if gapServed := longestGap(samples); gapServed > 3*time.Second {
		t.Errorf("no request was served for %s", gapServed)
	}
	t.Logf(
		"FIGURES etcd-leader-kill: writes acknowledged r1 %d r2 %d, failed r1 %d r2 %d, missing %d; first write acknowledged after the kill r1 %s r2 %s; "+
			"longest gap between acknowledged writes r1 %s r2 %s; requests %d ok %d lost %d; longest gap between served requests %s",
		len(
			acked(writes1),
		),
		len(acked(writes2)),
		fail1,
		fail2,
		len(missing),
		rec1.Round(10*time.Millisecond),
		rec2.Round(10*time.Millisecond),
		gap1.Round(
			10*time.Millisecond,
		),
		gap2.Round(10*time.Millisecond),
		o.Total,
		o.OK,
		o.Lost,
		longestGap(samples).Round(10*time.Millisecond),
	)
}

// runCtl runs switchyardctl against router's admin API with the world's token and returns its
// combined output.
func runCtl(w *world, router *node, args ...string) (string, error) {
	full := append([]string{"--addr=http://" + router.Admin, "--token-file=" + w.TokenFile}, args...)
	out, err := exec.Command(filepath.Join(binDir, "switchyardctl"), full...).CombinedOutput()
	return string(out), err
}

// etcdBinary returns the real etcd server binary: SWITCHYARD_BIN_DIR/etcd when present, else one
// built from the etcd server module the workspace already depends on (go.etcd.io/etcd/server/v3
// is etcd's own main package), into dir.
func etcdBinary(t *testing.T, dir string) string {
	t.Helper()
	if binDir != "" {
		if p := filepath.Join(binDir, "etcd"); isFile(p) {
			return p
		}
	}
	root, err := harness.WorkspaceRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "etcd")
	cmd := exec.Command("go", "build", "-o", bin, "go.etcd.io/etcd/server/v3")
	cmd.Dir = filepath.Join(root, "global-router")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build etcd: %v\n%s", err, out)
	}
	return bin
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// etcdMember is one real etcd server process on loopback. Its addresses and data directory stay
// the same across restarts.
type etcdMember struct {
	name, client string
	bin, dir     string
	args         []string

	mu   sync.Mutex
	proc *harness.Process
	runs int
}

// etcdCluster is a set of etcd members started together.
type etcdCluster struct {
	members []*etcdMember
}

// startEtcd starts an etcd cluster of n members in dir and waits until every member is healthy.
// The members are killed when the test ends.
func startEtcd(t *testing.T, bin, dir string, n int) *etcdCluster {
	t.Helper()
	c := &etcdCluster{}
	var peers []string
	for i := range n {
		m := &etcdMember{name: fmt.Sprintf("etcd-%d", i), bin: bin, dir: dir}
		c.members = append(c.members, m)
		peer := "http://" + mustPort(t)
		m.client = "http://" + mustPort(t)
		peers = append(peers, m.name+"="+peer)
		m.args = []string{"--name=" + m.name, "--data-dir=" + filepath.Join(dir, m.name),
			"--listen-client-urls=" + m.client, "--advertise-client-urls=" + m.client,
			"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
			"--initial-cluster-token=e2e", "--initial-cluster-state=new", "--log-level=warn"}
	}
	for _, m := range c.members {
		m.args = append(m.args, "--initial-cluster="+strings.Join(peers, ","))
		if err := m.launch(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, m := range c.members {
			m.Kill()
		}
	})
	for _, m := range c.members {
		if err := m.waitHealthy(); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func mustPort(t *testing.T) string {
	t.Helper()
	addr, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// Endpoints is the cluster's client URLs, comma-separated, for --etcd-endpoints.
func (c *etcdCluster) Endpoints() string {
	urls := make([]string, len(c.members))
	for i, m := range c.members {
		urls[i] = m.client
	}
	return strings.Join(urls, ",")
}

// Leader returns the member that is raft leader now, or nil.
func (c *etcdCluster) Leader(t *testing.T) *etcdMember {
	t.Helper()
	for _, m := range c.members {
		if m.running() && metricValue(t, strings.TrimPrefix(m.client, "http://"), "etcd_server_is_leader") == 1 {
			return m
		}
	}
	return nil
}

func (m *etcdMember) launch() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs++
	m.proc = &harness.Process{Name: m.name, Bin: m.bin, Args: m.args, Health: m.client + "/health",
		LogPath: filepath.Join(m.dir, fmt.Sprintf("%s.%d.log", m.name, m.runs))}
	return m.proc.Start()
}

func (m *etcdMember) waitHealthy() error {
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	return p.WaitHealthy(context.Background(), 90*time.Second)
}

// Restart starts the member again from its data directory and waits until it is healthy.
func (m *etcdMember) Restart() error {
	if err := m.launch(); err != nil {
		return err
	}
	return m.waitHealthy()
}

// Kill ends the member with SIGKILL, as a crash would, and waits for it.
func (m *etcdMember) Kill() {
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	if p == nil || !m.running() {
		return
	}
	_ = p.Signal(syscall.SIGKILL)
	<-p.Exited() // the kill is the point; its exit status is not
}

func (m *etcdMember) running() bool {
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	if p == nil {
		return false
	}
	select {
	case <-p.Exited():
		return false
	default:
		return true
	}
}

// policyWrite is one admin write attempted through a router.
type policyWrite struct {
	model   string
	at, dur time.Duration // start, from the writer's start, and how long it took
	rev     int64         // revision of an acknowledged write
	out     string        // switchyardctl's output for a failed one
}

// policyWriter puts policies through a router, one after another, until stopped, and records which
// were acknowledged.
type policyWriter struct {
	started time.Time
	stop    chan struct{}
	done    chan struct{}
	writes  []policyWrite
}

// startWriter writes policies "<prefix>-<i>" through router until stop is called.
func startWriter(w *world, router *node, prefix string) *policyWriter {
	wr := &policyWriter{started: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(wr.done)
		for i := 0; ; i++ {
			select {
			case <-wr.stop:
				return
			default:
			}
			model := fmt.Sprintf("%s-%d", prefix, i)
			start := time.Now()
			out, err := runCtl(
				w,
				router,
				"policy",
				"put",
				"--model="+model,
				"--overflow-threshold=0.7",
				"--timeout=2s",
				"-o",
				"json",
			)
			wr.writes = append(wr.writes, policyWrite{model: model, at: start.Sub(wr.started), dur: time.Since(start)})
			last := &wr.writes[len(wr.writes)-1]
			if err != nil {
				last.out = strings.TrimSpace(out)
				time.Sleep(100 * time.Millisecond)
				continue
			}
			var resp struct {
				Policy struct {
					Revision json.Number `json:"revision"`
				} `json:"policy"`
			}
			if jerr := json.Unmarshal([]byte(out), &resp); jerr == nil {
				last.rev, _ = resp.Policy.Revision.Int64()
			}
		}
	}()
	return wr
}

// Stop ends the writer and returns every write it attempted.
func (wr *policyWriter) Stop() []policyWrite {
	close(wr.stop)
	<-wr.done
	return wr.writes
}

// acked returns the acknowledged writes.
func acked(ws []policyWrite) []policyWrite {
	var out []policyWrite
	for _, x := range ws {
		if x.out == "" {
			out = append(out, x)
		}
	}
	return out
}

// storedPolicies lists the policies stored, by model, with their revisions.
func storedPolicies(t *testing.T, w *world, router *node) map[string]int64 {
	t.Helper()
	out, err := runCtl(w, router, "policy", "list", "-o", "json")
	if err != nil {
		t.Fatalf("policy list: %v\n%s", err, out)
	}
	var list struct {
		Policies []struct {
			Model    string      `json:"model"`
			Revision json.Number `json:"revision"`
		} `json:"policies"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("policy list -o json: %v\n%s", err, out)
	}
	got := map[string]int64{}
	for _, p := range list.Policies {
		got[p.Model], _ = p.Revision.Int64()
	}
	return got
}

// missingWrites returns the acknowledged writes not stored with their acknowledged revision.
func missingWrites(stored map[string]int64, ws []policyWrite) []string {
	var out []string
	for _, x := range acked(ws) {
		if rev, ok := stored[x.model]; !ok || (x.rev != 0 && rev != x.rev) {
			out = append(out, fmt.Sprintf("%s@%d (stored: %v@%d)", x.model, x.rev, ok, rev))
		}
	}
	return out
}

// waitWrite retries a policy write through router (a new model each time) until one is
// acknowledged or timeout passes, and returns how long it took.
func waitWrite(w *world, router *node, prefix string, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	var out string
	i := 0
	acked := poll.Within(timeout, func() bool {
		model := fmt.Sprintf("%s-%d", prefix, i)
		i++
		var err error
		out, err = runCtl(w, router, "policy", "put", "--model="+model, "--overflow-threshold=0.6", "--timeout=2s")
		return err == nil
	})
	if !acked {
		return time.Since(start), fmt.Errorf("write still failing after %s: %s", timeout, out)
	}
	return time.Since(start), nil
}

// hasDrained reports whether cluster is listed as drained by the router.
func hasDrained(t *testing.T, w *world, router *node, cluster string) bool {
	t.Helper()
	out, err := runCtl(w, router, "clusters", "-o", "json")
	if err != nil {
		t.Fatalf("clusters: %v\n%s", err, out)
	}
	var list struct {
		Clusters []struct {
			Name    string `json:"name"`
			Drained bool   `json:"drained"`
		} `json:"clusters"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("clusters -o json: %v\n%s", err, out)
	}
	for _, c := range list.Clusters {
		if c.Name == cluster {
			return c.Drained
		}
	}
	return false
}

// mustRunCtl runs switchyardctl and fails the test when it fails.
func mustRunCtl(t *testing.T, w *world, router *node, args ...string) string {
	t.Helper()
	out, err := runCtl(w, router, args...)
	if err != nil {
		t.Fatalf("switchyardctl %v: %v\n%s", args, err, out)
	}
	return out
}

// waitServedBy sends requests through router until one is served by cluster.
func waitServedBy(t *testing.T, router *node, cluster string, timeout time.Duration) {
	t.Helper()
	poll.UntilState(t, timeout, func() (bool, string) {
		resp := complete(t, router.Listen)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got := resp.Header.Get("X-Switchyard-Cluster")
		return resp.StatusCode == 200 && got == cluster, fmt.Sprintf("status %d from %q", resp.StatusCode, got)
	}, "router "+router.Name()+" to route to "+cluster)
}

// recovery returns how long after killed the first write started after it was acknowledged
// (-1: none), the longest time between two acknowledgements, and how many writes failed.
func recovery(ws []policyWrite, killed time.Duration) (rec, gap time.Duration, failed int) {
	rec = -1
	var last time.Duration
	for _, x := range ws {
		if x.out != "" {
			failed++
			continue
		}
		end := x.at + x.dur
		if rec < 0 && x.at >= killed {
			rec = end - killed
		}
		if last > 0 {
			gap = max(gap, end-last)
		}
		last = end
	}
	return rec, gap, failed
}

// longestGap returns the longest time between the sending of two consecutive successful requests.
func longestGap(samples []loadgen.Sample) time.Duration {
	var sent []time.Duration
	for i := range samples {
		if samples[i].OK() {
			sent = append(sent, samples[i].Sent)
		}
	}
	slices.Sort(sent)
	var gap time.Duration
	for i := 1; i < len(sent); i++ {
		gap = max(gap, sent[i]-sent[i-1])
	}
	return gap
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func ctlMessage(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// ctlCode returns the connect code switchyardctl printed for a failed call, e.g. "UNAVAILABLE".
func ctlCode(out string) string {
	out = strings.TrimSpace(out)
	i, j := strings.LastIndexByte(out, '('), strings.LastIndexByte(out, ')')
	if i < 0 || j < i {
		return ""
	}
	return out[i+1 : j]
}
