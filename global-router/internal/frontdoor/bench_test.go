package frontdoor_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable/clustertabletest"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
	"github.com/switchyard-dev/switchyard/gossip/sketch"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// benchPrompt is a 1,200-byte prompt (about 300 tokens, 18 prefix blocks).
var benchPrompt = strings.Repeat("hello world ", 100)

// benchBody is the streaming completion both paths of the forwarding benchmarks send.
var benchBody = `{"model":"llama","stream":true,"prompt":"` + benchPrompt + `"}`

// streamingGateway stands in for a cluster gateway: it answers a completion as an SSE stream of
// five token events and a usage event, flushing each, with no artificial delay, so all measured
// time is HTTP and forwarding work.
func streamingGateway(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Server-Timing", "gateway;dur=0.050") // as a gateway reports its own time
	rc := http.NewResponseController(w)
	for i := range 5 {
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"t%d\"}]}\n\n", i)
		_ = rc.Flush()
	}
	fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":300,\"completion_tokens\":5}}\n\ndata: [DONE]\n\n")
}

// benchEnv is a loopback gateway stand-in and a router front door in front of it.
type benchEnv struct {
	gateway string // base URL of the gateway stand-in
	router  string // base URL of the router's front door
}

// newBenchEnv starts the gateway stand-in (HTTP/1.1 and h2c, as a cluster gateway's listener)
// and a us-east-1 router over six clusters in three regions whose summaries all point at it: the
// real cluster table, routing decision and forwarder (h2c to the gateway), served like the
// router's OpenAI port (HTTP/1.1 and h2c). Everything stops when b ends.
func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	gw := httptest.NewUnstartedServer(http.HandlerFunc(streamingGateway))
	gw.Config.Protocols = new(http.Protocols)
	gw.Config.Protocols.SetHTTP1(true)
	gw.Config.Protocols.SetUnencryptedHTTP2(true)
	gw.Start()
	b.Cleanup(gw.Close)

	table := benchTable(gw.URL)
	fwd, err := forward.New(forward.DefaultConfig(), table)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(fwd.Close)
	front := httptest.NewUnstartedServer(benchFrontDoor(table, fwd).Handler())
	front.Config.Protocols = new(http.Protocols)
	front.Config.Protocols.SetHTTP1(true)
	front.Config.Protocols.SetUnencryptedHTTP2(true)
	front.Start()
	b.Cleanup(front.Close)
	return &benchEnv{gateway: gw.URL, router: front.URL}
}

// benchTable is a us-east-1 router's cluster table over six clusters, two in each of three
// regions, whose gateways are all at url.
func benchTable(url string) *clustertable.Table {
	return clustertable.New(clustertable.Config{Region: "us-east-1", RTT: map[string]time.Duration{
		"us-west-2": 70 * time.Millisecond,
		"eu-west-1": 80 * time.Millisecond,
	}}, newHeartbeatSource(url, 250*time.Millisecond), nil)
}

func benchFrontDoor(table *clustertable.Table, fwd frontdoor.Forwarder) *frontdoor.Server {
	cfg := frontdoor.DefaultConfig()
	cfg.Region = "us-east-1"
	return frontdoor.New(cfg, table, policies{}, fwd, nil, frontdoor.NewMetrics(prometheus.NewRegistry()))
}

// newHeartbeatSource returns six clusters (two per region) whose gateways at url publish a fresh
// summary every interval. Each summary carries a 1,024-hash prefix sketch holding the benchmark
// prompt's blocks, as a gateway's default sketch would.
func newHeartbeatSource(url string, interval time.Duration) *clustertabletest.Republishing {
	hashes := prefix.Hashes(nil, "llama", []byte(benchPrompt), 0)
	s := &clustertabletest.Republishing{Interval: interval}
	for i, c := range []struct{ name, region string }{
		{"east-a", "us-east-1"}, {"east-b", "us-east-1"}, {"west-a", "us-west-2"},
		{"west-b", "us-west-2"}, {"eu-a", "eu-west-1"}, {"eu-b", "eu-west-1"},
	} {
		bl, err := sketch.NewForCapacity(1024, 0.02, uint64(i))
		if err != nil {
			panic(err)
		}
		for j, h := range hashes {
			if j < 8 || i%2 == 0 { // half the clusters cache the whole prompt, half its first 8 blocks
				bl.Add(h)
			}
		}
		total := uint64(1_000_000)
		s.Summaries = append(s.Summaries, gossip.Summary{
			Node: c.name + "-gw", Cluster: c.name, Region: c.region, State: gossip.StateAlive,
			Summary: &gossipv1.CapacitySummary{
				Cluster: c.name, Region: c.region, GatewayUrl: url,
				Models: []*gossipv1.ModelCapacity{{
					Name: "llama", ReadyPods: 8, TotalKvTokens: total, FreeKvTokens: total * 7 / 10,
					PredictedTtftMs: 60, PrefillTokensPerSecond: 160_000, PrefixSketch: bl.Proto(),
				}},
			},
		})
	}
	return s
}

// BenchmarkForward sends one streaming completion at a time directly to a loopback gateway
// stand-in and through the router's front door and forwarder (h2c to the gateway); the
// difference between the two is the router's cost per request. cpu-us/op is the process's CPU
// time per request (client, router and gateway stand-in together), the steadier figure on a
// shared machine; allocs/op likewise counts all three.
func BenchmarkForward(b *testing.B) {
	e := newBenchEnv(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}}
	b.Cleanup(client.CloseIdleConnections)
	for _, target := range []struct{ name, url string }{{"direct", e.gateway}, {"router", e.router}} {
		b.Run(target.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				if err := stream(client, target.url+"/v1/completions", benchBody); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Microsecond)/float64(b.N), "cpu-us/op")
		})
	}
}

// stream posts body to url and reads the whole answer, failing on anything but a complete stream.
func stream(client *http.Client, url, body string) error {
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
		return fmt.Errorf("status %d, body %q", resp.StatusCode, b)
	}
	return nil
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkServeInference is the front door's own work on one request, with no network: reading
// and parsing the body, the prefix hashes, the cluster table's view, the routing decision, the
// forward targets and the metrics, in front of a forwarder that answers at once.
func BenchmarkServeInference(b *testing.B) {
	table := benchTable("http://127.0.0.1:1")
	h := benchFrontDoor(table, answerAtOnce{table}).Handler()
	body := strings.NewReader(benchBody)
	r := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		body.Reset(benchBody)
		r.Body, r.ContentLength = io.NopCloser(body), int64(len(benchBody))
		clear(w.h)
		w.status = 0
		h.ServeHTTP(w, r)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
}

// answerAtOnce is a forwarder whose first target answers 200 with no body; it records the send
// in the table as the real forwarder does.
type answerAtOnce struct{ table *clustertable.Table }

func (a answerAtOnce) Forward(
	w http.ResponseWriter,
	_ *http.Request,
	_ []byte,
	targets []forward.Target,
	_ forward.Retarget,
) error {
	t := targets[0]
	a.table.Observe(forward.Outcome{Target: t, Status: http.StatusOK})
	w.Header().Set(contract.HeaderRoute, t.Route)
	w.Header().Set(contract.HeaderCluster, t.Cluster)
	w.Header().Set(contract.HeaderRegion, t.Region)
	w.WriteHeader(http.StatusOK)
	return nil
}

// discardWriter is a ResponseWriter that keeps the status and drops the body.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}
