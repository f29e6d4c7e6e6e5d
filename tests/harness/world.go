package harness

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// TestModel is the model every simulated pod of a World serves.
const TestModel = "test-model"

// World is a set of real Switchyard processes started one by one for a fault-injection test:
// simulated pods, gateways and routers, each its own process, sharing a gossip keyring and an
// admin token. Every process is stopped when the test ends.
type World struct {
	t      *testing.T
	dir    string
	binDir string
	// KeyFile is the gossip keyring; TokenFile the routers' admin token.
	KeyFile, TokenFile string
	// TimeScale multiplies every simulated duration of the pods started after it is set.
	TimeScale float64
	// RegionalPools gives each region a gossip pool of its own (its gateways and routers), as
	// regional pools with aggregators run; by default every node joins one pool.
	RegionalPools bool

	mu    sync.Mutex
	nodes []*Node
	seq   int
	seeds map[string]string // gossip address of the first gossip Node of each pool: the others join through it
	toxic *toxiproxy.ApiServer
}

// Node is one process of a World. Its addresses stay the same across restarts.
type Node struct {
	w    *World
	name string
	bin  string
	args []string
	// health is polled until it answers 200 after each start; then models (a gateway's plain-HTTP
	// /v1/models), when set, until it lists a model.
	health, models string
	// Listen is the data-path address (OpenAI API), Metrics the /metrics,/healthz,/readyz
	// address, Gossip the memberlist address, Admin the router's admin API, ExtProc the
	// gateway's ext_proc gRPC address; each "" when the process has none.
	Listen, Metrics, Gossip, Admin, ExtProc string

	mu   sync.Mutex
	proc *Process
	runs int
}

// NewWorld returns an empty World whose processes run the binaries in binDir (see Build); every
// process is stopped when the test ends.
func NewWorld(t *testing.T, binDir string) *World {
	t.Helper()
	w := &World{t: t, dir: t.TempDir(), binDir: binDir, TimeScale: 0.2}
	key := make([]byte, 32)
	tok := make([]byte, 24)
	_, _ = rand.Read(key)
	_, _ = rand.Read(tok)
	w.KeyFile = w.Write("gossip.key", base64.StdEncoding.EncodeToString(key))
	w.TokenFile = w.Write("admin-token", hex.EncodeToString(tok))
	t.Cleanup(w.stopAll)
	return w
}

// Write stores content in a file of the World's directory and returns its path.
func (w *World) Write(name, content string) string {
	w.t.Helper()
	path := filepath.Join(w.dir, name)
	if err := os.WriteFile(path, []byte(content+"\n"), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return path
}

// Token is the routers' admin bearer token.
func (w *World) Token() string {
	b, err := os.ReadFile(w.TokenFile)
	if err != nil {
		w.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func (w *World) port() string {
	w.t.Helper()
	addr, err := FreePort()
	if err != nil {
		w.t.Fatal(err)
	}
	return addr
}

// Pod starts one simulated model server of the given GPU profile.
func (w *World) Pod(profile string, extra ...string) *Node {
	n := &Node{w: w, bin: "modelsim", Listen: w.port()}
	n.name = w.name("pod-" + profile)
	n.health = "http://" + n.Listen + "/health"
	n.args = append([]string{"--listen=" + n.Listen, "--profile=" + profile, "--model=" + TestModel,
		fmt.Sprintf("--time-scale=%g", w.TimeScale)}, extra...)
	w.start(n)
	return n
}

// Gateway starts a cluster gateway over the given pod addresses (nil: extra gives the endpoints,
// e.g. --endpoints-file), in the gossip pool. It
// advertises its --listen address, at an https:// URL when extra serves it over TLS
// (--tls-cert-file), as the chart does.
func (w *World) Gateway(cluster, region string, pods []string, extra ...string) *Node {
	n := &Node{w: w, bin: "cluster-gateway", Listen: w.port(), Metrics: w.port(), Gossip: w.port(), ExtProc: w.port()}
	n.name = w.name("gateway-" + cluster)
	n.health = "http://" + n.Metrics + "/healthz"
	scheme := "http"
	if slices.ContainsFunc(extra, func(a string) bool { return strings.HasPrefix(a, "--tls-cert-file=") }) {
		scheme = "https"
	} else {
		n.models = "http://" + n.Listen + "/v1/models"
	}
	n.args = append([]string{
		"--cluster=" + cluster,
		"--region=" + region,
		"--listen=" + n.Listen,
		"--metrics-listen=" + n.Metrics,
		"--ext-proc-listen=" + n.ExtProc,
		"--grpc-health-port=0",
		"--gossip-bind=" + n.Gossip,
		"--gossip-key-file=" + w.KeyFile,
		"--advertise-url=" + scheme + "://" + n.Listen,
	},
		w.joinArgs(region, n.Gossip)...)
	if pods != nil { // nil: extra names the endpoints (--endpoints-file)
		n.args = append(n.args, "--endpoints="+strings.Join(pods, ","))
	}
	n.args = append(n.args, extra...)
	w.start(n)
	return n
}

// Router starts a region's global router and waits until it is ready (/readyz). With etcd == ""
// it embeds its own etcd.
func (w *World) Router(region, etcd string, extra ...string) *Node {
	return w.router(region, etcd, "/readyz", extra)
}

// RouterNoWait is Router waiting only until the router is up (/healthz), not ready: for a router
// that cannot be ready yet, e.g. one whose etcd is down.
func (w *World) RouterNoWait(region, etcd string, extra ...string) *Node {
	return w.router(region, etcd, "/healthz", extra)
}

// router starts a router and waits until health on its metrics port answers 200.
func (w *World) router(region, etcd, health string, extra []string) *Node {
	n := &Node{w: w, bin: "global-router", Listen: w.port(), Metrics: w.port(), Gossip: w.port(), Admin: w.port()}
	n.name = w.name("router-" + region)
	n.health = "http://" + n.Metrics + health
	n.args = []string{"--region=" + region, "--node-name=" + n.name, "--listen=" + n.Listen,
		"--admin-listen=" + n.Admin, "--metrics-listen=" + n.Metrics, "--gossip-bind=" + n.Gossip,
		"--gossip-key-file=" + w.KeyFile, "--gossip-profile=lan", "--admin-token-file=" + w.TokenFile,
		"--data-dir=" + filepath.Join(w.dir, n.name)}
	n.args = append(n.args, w.joinArgs(region, n.Gossip)...)
	if etcd == "" {
		n.args = append(n.args, "--embedded-etcd-listen="+w.port())
	} else {
		n.args = append(n.args, "--etcd-endpoints="+etcd)
	}
	n.args = append(n.args, extra...)
	w.start(n)
	return n
}

// EtcdURL is the client URL of the etcd a router embeds ("" when it uses an external one).
func (n *Node) EtcdURL() string {
	for _, a := range n.args {
		if v, ok := strings.CutPrefix(a, "--embedded-etcd-listen="); ok {
			return "http://" + v
		}
	}
	return ""
}

// joinArgs makes the first gossip Node of the World (of its region, with RegionalPools) the seed
// of every later one.
func (w *World) joinArgs(region, self string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	pool := ""
	if w.RegionalPools {
		pool = region
	}
	if w.seeds == nil {
		w.seeds = map[string]string{}
	}
	seed, ok := w.seeds[pool]
	if !ok {
		w.seeds[pool] = self
		return nil
	}
	return []string{"--gossip-join=" + seed}
}

func (w *World) name(base string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	return fmt.Sprintf("%s-%d", base, w.seq)
}

// start launches n (again) and waits until it is healthy (a gateway: until it serves a model).
func (w *World) start(n *Node) {
	w.t.Helper()
	w.mu.Lock()
	w.nodes = append(w.nodes, n)
	w.mu.Unlock()
	if err := n.Start(); err != nil {
		w.t.Fatal(err)
	}
}

// Start launches the Node's process (again, after a kill or stop) and waits until it is healthy
// (a gateway with a plain-HTTP listener: until its /v1/models lists a model).
func (n *Node) Start() error {
	bin, err := FindBinary(n.w.binDir, n.bin)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.runs++
	p := &Process{Name: n.name, Bin: bin, Args: n.args, Health: n.health,
		LogPath: filepath.Join(n.w.dir, fmt.Sprintf("%s.%d.log", n.name, n.runs))}
	n.proc = p
	n.mu.Unlock()
	if err := p.Start(); err != nil {
		return err
	}
	if err := p.WaitHealthy(context.Background(), 90*time.Second); err != nil || n.models == "" {
		return err
	}
	return p.waitServing(context.Background(), n.models, 90*time.Second)
}

// Kill ends the process with SIGKILL, as a crash or a lost machine would, and waits for it.
func (n *Node) Kill() {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	_ = p.Signal(syscall.SIGKILL)
	<-p.Exited()
}

// Stop sends SIGTERM and returns the exit error (nil for status 0) after at most grace.
func (n *Node) Stop(grace time.Duration) error {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	return p.Stop(grace)
}

// World is the World the Node belongs to.
func (n *Node) World() *World { return n.w }

// Name is the Node's process name, unique in its World.
func (n *Node) Name() string { return n.name }

// Proc is the Node's current process.
func (n *Node) Proc() *Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc
}

// Log returns the Node's current log, for failure messages.
func (n *Node) Log() string {
	b, _ := os.ReadFile(n.Proc().LogPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// stopAll stops every Node still running, routers first, then gateways, then pods, then the
// rest (etcd servers).
func (w *World) stopAll() {
	order := []string{"global-router", "cluster-gateway", "modelsim"}
	for i := range len(order) + 1 {
		var wg sync.WaitGroup
		for _, n := range w.nodes {
			rank := slices.Index(order, n.bin)
			if rank < 0 {
				rank = len(order) // anything else (etcd servers) last
			}
			if rank != i {
				continue
			}
			p := n.Proc()
			if p == nil {
				continue
			}
			select {
			case <-p.Exited():
				continue
			default:
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = p.Stop(15 * time.Second)
			}()
		}
		wg.Wait()
	}
	if w.toxic != nil {
		_ = w.toxic.Collection.Clear() // the proxies are closed; nothing to report at cleanup
	}
}

// Proxy starts a TCP fault proxy (toxiproxy, as a library) in front of upstream and returns it;
// clients connect to its Listen address. It is removed when the test ends.
func (w *World) Proxy(name, upstream string) *toxiproxy.Proxy {
	w.t.Helper()
	w.mu.Lock()
	if w.toxic == nil {
		w.toxic = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	}
	srv := w.toxic
	w.mu.Unlock()
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", upstream)
	if err := srv.Collection.Add(p, true); err != nil {
		w.t.Fatalf("fault proxy %s: %v", name, err)
	}
	return p
}

// AddToxic adds a toxic to p, e.g. AddToxic(t, p, "latency", "downstream", `{"latency":200}`).
func AddToxic(t *testing.T, p *toxiproxy.Proxy, kind, stream, attrs string) {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`,
		kind+"_"+stream, kind, stream, attrs)
	if _, err := p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		t.Fatalf("toxic %s: %v", kind, err)
	}
}

// MetricValue sums the samples of a Prometheus metric family whose label set contains every
// given label pair ("k=v"), scraped from addr/metrics.
func MetricValue(t *testing.T, addr, family string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var sum float64
	for line := range strings.SplitSeq(string(b), "\n") {
		if !strings.HasPrefix(line, family) || strings.HasPrefix(line, "#") {
			continue
		}
		rest := line[len(family):]
		if rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		ok := true
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			if !strings.Contains(rest, k+`="`+v+`"`) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		var f float64
		if _, err := fmt.Sscan(rest[strings.LastIndexByte(rest, ' ')+1:], &f); err == nil {
			sum += f
		}
	}
	return sum
}
