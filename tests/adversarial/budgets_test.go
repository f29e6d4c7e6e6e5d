package adversarial

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// budgetCall is one request of the load below: when its answer started (since the load began),
// its status, and for a streamed 200 whether a usage chunk and [DONE] reached the client; for a
// 429 whether it carried Retry-After and code rate_limit_exceeded.
type budgetCall struct {
	at         time.Duration
	status     int
	usage      int // input plus output tokens of a usage chunk the client saw (0: none)
	done       bool
	wellFormed bool
}

// TestTenantBudgetAcrossRouters drives two tenants over their limits through three real routers
// of one region (one embedded etcd, real gossip) from two paced clients per router each, at
// twice the limits: one tenant limited in requests per second, one in tokens per minute whose
// requests are streams that neither ask for usage nor name max_tokens (so the reservation, the
// prompt alone, is far below the usage: only the usage the routers ask for charges them right).
// Each router enforces a third of each limit, so the admitted rates over the measured spans are
// within ±10% of the limits, and no client sees a usage chunk it did not ask for.
func TestTenantBudgetAcrossRouters(t *testing.T) {
	w := newWorld(t)
	w.TimeScale = 0.05
	w.Gateway("adv-budget", "us-east-1", []string{w.Pod("h100").Listen, w.Pod("h100").Listen})
	const window = "--tenant-token-window=10s"
	r1 := w.Router("us-east-1", "", window)
	routers := []*harness.Node{
		r1,
		w.Router("us-east-1", r1.EtcdURL(), window),
		w.Router("us-east-1", r1.EtcdURL(), window),
	}
	chat := func(extra string) string {
		return `{"model":"` + harness.TestModel + `","messages":[{"role":"user","content":` +
			`"How many routers share one budget?"}],"stream":true` + extra + `}`
	}
	// The usage of one tokens request, asked for by a tenant without limits.
	calib := budgetSend(routers[0], "calibration", "/v1/chat/completions",
		chat(`,"stream_options":{"include_usage":true}`), time.Now())
	if calib.status != http.StatusOK || calib.usage < 20 {
		t.Fatalf("calibration request: %+v, want 200 with a usage chunk of at least 20 tokens", calib)
	}
	const rps, tokRate = 30.0, 12.0 // the rps tenant's limit; the requests per second the tok tenant's allows
	tpm := int64(math.Round(float64(calib.usage) * tokRate * 60))
	for _, args := range [][]string{
		{"tenant", "set", "rps", fmt.Sprintf("--requests-per-second=%g", rps)},
		{"tenant", "set", "tok", fmt.Sprintf("--tokens-per-minute=%d", tpm)},
	} {
		if out, err := ctl(w, routers[0], args...); err != nil {
			t.Fatalf("switchyardctl %v: %v\n%s", args, err, out)
		}
	}
	waitLimited(t, routers, "rps", `{"model":"`+harness.TestModel+`","prompt":"x","max_tokens":1}`)

	const run = 40 * time.Second
	rpsCalls, tokCalls := driveBudget(routers, run, []budgetLoad{
		{"rps", "/v1/completions", `{"model":"` + harness.TestModel + `","prompt":"count me","max_tokens":2}`, 2 * rps},
		{"tok", "/v1/chat/completions", chat(""), 2 * tokRate},
	})
	for _, c := range append(rpsCalls, tokCalls...) {
		if c.status != http.StatusOK && (c.status != http.StatusTooManyRequests || !c.wellFormed) {
			t.Fatalf("a request got %+v, want 200 or 429 rate_limit_exceeded with Retry-After", c)
		}
	}
	// Requests per second, from 5 s (past the buckets' first second) to 25 s.
	got := float64(admitted(rpsCalls, 5*time.Second, 25*time.Second)) / 20
	t.Logf("rps tenant: %.1f admitted per second, limit %g", got, rps)
	if math.Abs(got-rps) > 0.1*rps {
		t.Errorf("rps tenant admitted %.1f requests per second across 3 routers, want %g ± 10%%", got, rps)
	}
	// Tokens per minute, from 10 s (past the first token window) to 40 s.
	for _, c := range tokCalls {
		if c.status == http.StatusOK && (c.usage != 0 || !c.done) {
			t.Fatalf("a stream that did not ask for usage got %+v: want [DONE] and no usage chunk", c)
		}
	}
	tokens := float64(admitted(tokCalls, 10*time.Second, 40*time.Second)*calib.usage) * 2 // per minute
	t.Logf("tok tenant: %.0f tokens admitted per minute (%d a request), limit %d", tokens, calib.usage, tpm)
	if math.Abs(tokens-float64(tpm)) > 0.1*float64(tpm) {
		t.Errorf("tok tenant admitted %.0f tokens per minute across 3 routers, want %d ± 10%%", tokens, tpm)
	}
	for _, r := range routers {
		if n := metricValue(t, r.Metrics,
			`switchyard_router_tenant_stream_usage_asked_total{outcome="asked"}`); n == 0 {
			t.Errorf("router %s asked no stream for its usage", r.Name())
		}
	}
}

// budgetLoad is one tenant's offered load: rate requests per second over all clients.
type budgetLoad struct {
	tenant, path, body string
	rate               float64
}

// driveBudget offers each load for run, split over two paced clients per router (open loop: a
// request leaves at its time whatever the answers before it), and returns each load's calls.
func driveBudget(routers []*harness.Node, run time.Duration, loads []budgetLoad) (first, second []budgetCall) {
	const clientsPerRouter = 2
	start := time.Now()
	var mu sync.Mutex
	out := make([][]budgetCall, len(loads))
	var wg sync.WaitGroup
	for i, l := range loads {
		every := time.Duration(float64(time.Second) * float64(len(routers)*clientsPerRouter) / l.rate)
		for j := range len(routers) * clientsPerRouter {
			r := routers[j%len(routers)]
			wg.Go(func() {
				// Clients start spread over one interval, so the sends are even in time.
				next := start.Add(every * time.Duration(j) / time.Duration(len(routers)*clientsPerRouter))
				var sends sync.WaitGroup
				for ; time.Until(next) > -every && next.Sub(start) < run; next = next.Add(every) {
					time.Sleep(time.Until(next))
					sends.Go(func() {
						c := budgetSend(r, l.tenant, l.path, l.body, start)
						mu.Lock()
						out[i] = append(out[i], c)
						mu.Unlock()
					})
				}
				sends.Wait()
			})
		}
	}
	wg.Wait()
	return out[0], out[1]
}

// admitted counts the 200s among calls whose answer started in [from, to).
func admitted(calls []budgetCall, from, to time.Duration) int {
	n := 0
	for _, c := range calls {
		if c.status == http.StatusOK && c.at >= from && c.at < to {
			n++
		}
	}
	return n
}

// budgetClient keeps connections to the routers for the paced clients.
var budgetClient = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 256},
}

// budgetSend sends one request as tenant and reads its answer.
func budgetSend(r *harness.Node, tenant, path, body string, start time.Time) budgetCall {
	req, err := http.NewRequest(http.MethodPost, "http://"+r.Listen+path, strings.NewReader(body))
	if err != nil {
		return budgetCall{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-switchyard-tenant", tenant)
	resp, err := budgetClient.Do(req)
	if err != nil {
		return budgetCall{at: time.Since(start)}
	}
	defer resp.Body.Close()
	c := budgetCall{at: time.Since(start), status: resp.StatusCode}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error apiError `json:"error"`
		}
		c.wellFormed = json.NewDecoder(resp.Body).Decode(&e) == nil && e.Error.Code == "rate_limit_exceeded" &&
			resp.Header.Get("Retry-After") != ""
		return c
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		switch {
		case !ok:
		case data == "[DONE]":
			c.done = true
		case strings.Contains(data, `"usage":{`):
			var u struct {
				Usage struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if json.Unmarshal([]byte(data), &u) == nil {
				c.usage = u.Usage.PromptTokens + u.Usage.CompletionTokens
			}
		}
	}
	return c
}

// waitLimited waits until every router refuses a burst of tenant's requests: the tenant's
// limits are loaded and the router counts the region's three routers.
func waitLimited(t *testing.T, routers []*harness.Node, tenant, body string) {
	t.Helper()
	for _, r := range routers {
		if !poll.Within(30*time.Second, func() bool {
			for range 20 {
				if budgetSend(r, tenant, "/v1/completions", body, time.Now()).status == http.StatusTooManyRequests {
					return true
				}
			}
			return false
		}) {
			t.Fatalf("router %s never limited tenant %s\n%s", r.Name(), tenant, r.Log())
		}
	}
	time.Sleep(2 * time.Second) // the buckets refill
}
