package adversarial

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// Stalled uploads (docs/security.md, "Input limits"): every connection declares a body of
// declaredBytes and sends sentBytes of it, then stalls.
const (
	stalledConns  = 500
	declaredBytes = 30_000_000
	sentBytes     = 3000
	// bodyBudget is the in-flight body budget both binaries run with here (their default
	// without a memory limit).
	bodyBudget = 256 << 20
	// rssBound is the most either process may hold during the attack: every byte the body
	// budget allows plus 200 MiB for everything else (the runtime, a thousand goroutines and
	// their connection buffers, the router's embedded etcd). Reading each declared length up
	// front would be 500 × 30 MB = 15 GB of buffers.
	rssBound = bodyBudget + 200<<20
)

// TestStalledUploadsCannotExhaustMemory opens 500 connections to the gateway's --listen and 500
// to the router's, each declaring a 30 MB body, sending 3 KB and stalling. Each process keeps
// its resident memory and Go heap under the body budget plus 200 MiB (the stalled bodies hold
// what they sent, 4 KiB buffers, not 30 MB each), a normal completion still succeeds through
// the router and the gateway during the stall (the budget is far from spent), and once the
// stalled connections close the budget is back to zero and both serve normally.
func TestStalledUploadsCannotExhaustMemory(t *testing.T) {
	raiseFileLimit(t, 4*stalledConns)
	w := newWorld(t)
	budget := fmt.Sprintf("--max-inflight-body-bytes=%d", bodyBudget)
	gw := w.Gateway("adv-bodies", "us-east-1", []string{w.Pod("h100").Listen}, budget)
	router := w.Router("us-east-1", "", budget)
	targets := []struct {
		name  string
		node  *harness.Node
		gauge string
	}{
		{"gateway", gw, "switchyard_gateway_inflight_body_bytes"},
		{"router", router, "switchyard_router_inflight_body_bytes"},
	}

	var conns []net.Conn
	for _, tg := range targets {
		conns = append(conns, stall(t, tg.node.Listen, stalledConns, declaredBytes)...)
	}
	for _, tg := range targets {
		want := float64(stalledConns * 4096) // each body's first buffer holds the 3 KB sent
		poll.Until(t, 20*time.Second, func() bool {
			return harness.MetricValue(t, tg.node.Metrics, tg.gauge) >= want
		}, tg.name+" reading every stalled body")
		if held := harness.MetricValue(t, tg.node.Metrics, tg.gauge); held > 2*want {
			t.Errorf("%s: stalled bodies hold %.0f bytes, want about %.0f (what they sent)", tg.name, held, want)
		}
		checkMemory(t, tg.name, tg.node)
	}
	servesCompletion(t, "router during the stall", router.Listen)
	servesCompletion(t, "gateway during the stall", gw.Listen)

	for _, c := range conns {
		_ = c.Close()
	}
	for _, tg := range targets {
		poll.Until(t, 20*time.Second, func() bool {
			return harness.MetricValue(t, tg.node.Metrics, tg.gauge) == 0
		}, tg.name+" budget back after the stall")
	}
	servesCompletion(t, "router after the stall", router.Listen)
	servesCompletion(t, "gateway after the stall", gw.Listen)
}

// TestStalledStreamsOnOneH2CConnection is the HTTP/2 variant against the gateway: one h2c
// connection carries as many concurrent streams as the gateway allows (250), each declaring
// a 30 MB body and sending 3 KB. The gateway holds about what they sent, and serves a normal
// request on another connection meanwhile.
func TestStalledStreamsOnOneH2CConnection(t *testing.T) {
	w := newWorld(t)
	gw := w.Gateway("adv-bodies-h2", "us-east-1", []string{w.Pod("h100").Listen})
	tr := &http.Transport{Protocols: new(http.Protocols), MaxConnsPerHost: 1}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	const streams = 250
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for range streams {
		pr, pw := io.Pipe()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+gw.Listen+"/v1/completions", pr)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = declaredBytes
		wg.Go(func() {
			go func() {
				_, _ = io.WriteString(pw, `{"model":"`+harness.TestModel+`","prompt":"`+strings.Repeat("x", sentBytes))
				<-ctx.Done()
				_ = pw.CloseWithError(ctx.Err())
			}()
			if resp, err := tr.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
		})
	}
	want := float64(streams * 4096)
	poll.Until(t, 20*time.Second, func() bool {
		return harness.MetricValue(t, gw.Metrics, "switchyard_gateway_inflight_body_bytes") >= want
	}, "the gateway reading every stalled stream")
	checkMemory(t, "gateway", gw)
	servesCompletion(t, "gateway during the h2c stall", gw.Listen)
	cancel()
	poll.Until(t, 20*time.Second, func() bool {
		return harness.MetricValue(t, gw.Metrics, "switchyard_gateway_inflight_body_bytes") == 0
	}, "budget back after the streams end")
}

// TestBodyBudgetSpentAnswers503 runs a gateway whose body budget is one largest body (1 MiB)
// under 500 stalled uploads that declare 1 MB each (within its body limit) and send 3 KB: once they hold the budget, a
// normal request is answered 503
// with Retry-After and the OpenAI-style error naming the budget, the refusals are counted, and
// the gateway serves again when the stalled connections close.
func TestBodyBudgetSpentAnswers503(t *testing.T) {
	raiseFileLimit(t, 2*stalledConns)
	w := newWorld(t)
	gw := w.Gateway(
		"adv-budget",
		"us-east-1",
		[]string{w.Pod("h100").Listen},
		"--max-body-bytes=1048576",
		"--max-inflight-body-bytes=1MiB",
	)
	conns := stall(t, gw.Listen, stalledConns, 1_000_000) // within the body limit: only the budget refuses them
	poll.Until(t, 20*time.Second, func() bool {
		return harness.MetricValue(
			t,
			gw.Metrics,
			"switchyard_gateway_request_body_refused_total",
			"door=http",
			"reason=budget",
		) > 0
	}, "the budget spent")
	body := `{"model":"` + harness.TestModel + `","prompt":"` + strings.Repeat("hello ", 2000) + `","max_tokens":2}`
	resp, err := http.Post("http://"+gw.Listen+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var answer struct {
		Error struct{ Type, Code string } `json:"error"`
	}
	if err := json.Unmarshal(b, &answer); err != nil || resp.StatusCode != http.StatusServiceUnavailable ||
		resp.Header.Get("Retry-After") == "" || answer.Error.Code != "body_budget_exhausted" {
		t.Fatalf("with the budget spent: %d, Retry-After %q, %s; want 503 body_budget_exhausted with Retry-After",
			resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	checkMemory(t, "gateway", gw)
	for _, c := range conns {
		_ = c.Close()
	}
	poll.Until(t, 20*time.Second, func() bool {
		return harness.MetricValue(t, gw.Metrics, "switchyard_gateway_inflight_body_bytes") == 0
	}, "budget back")
	servesCompletion(t, "gateway after the stall", gw.Listen)
}

// stall opens n connections to addr, each declaring a body of declared bytes and sending
// sentBytes of it; they are closed when the test ends.
func stall(t *testing.T, addr string, n, declared int) []net.Conn {
	t.Helper()
	head := fmt.Sprintf(
		"POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		addr,
		declared,
	)
	payload := head + `{"model":"` + harness.TestModel + `","prompt":"` + strings.Repeat(
		"x",
		sentBytes-len(harness.TestModel)-24,
	)
	conns := make([]net.Conn, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range conns {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err == nil {
				_, err = io.WriteString(c, payload)
			}
			if err != nil {
				errs <- err
				return
			}
			conns[i] = c
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatalf("stalled upload to %s: %v", addr, err)
	}
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return conns
}

// checkMemory fails t when n's resident memory or Go heap exceeds rssBound.
func checkMemory(t *testing.T, name string, n *harness.Node) {
	t.Helper()
	rss := vmRSS(t, n.Proc().Pid())
	heap := harness.MetricValue(t, n.Metrics, "go_memstats_heap_alloc_bytes")
	t.Logf("%s under attack: VmRSS %d MiB, Go heap %.0f MiB", name, rss>>20, heap/(1<<20))
	if rss > rssBound || heap > rssBound {
		t.Errorf(
			"%s: VmRSS %d MiB, heap %.0f MiB; want both under %d MiB (body budget + 200 MiB)",
			name,
			rss>>20,
			heap/(1<<20),
			rssBound>>20,
		)
	}
}

// vmRSS is a process's resident set size in bytes, from /proc/<pid>/status.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// completion sends a normal completion to addr and fails t unless it is answered 200.
func servesCompletion(t *testing.T, what, addr string) {
	t.Helper()
	body := `{"model":"` + harness.TestModel + `","prompt":"hello","max_tokens":2}`
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Post("http://"+addr+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", what, resp.StatusCode, b)
	}
}

// raiseFileLimit raises this process's open-file limit to at least n plus headroom (up to the
// hard limit) before the World starts, so the processes it starts inherit it too.
func raiseFileLimit(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	want := min(n+1024, lim.Max)
	if lim.Cur < want {
		prev := lim.Cur
		lim.Cur = want
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lim.Cur = prev; _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })
	}
	if lim.Cur < n+64 {
		t.Skipf("open-file limit %d is below the %d connections the attack needs", lim.Cur, n)
	}
}
