package adversarial

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// sessionClient sends completions with a tenant and a session id to one front door.
type sessionClient struct {
	t      *testing.T
	url    string
	client *http.Client
}

func newSessionClient(t *testing.T, listen string) *sessionClient {
	return &sessionClient{
		t:      t,
		url:    "http://" + listen + "/v1/completions",
		client: &http.Client{Timeout: 60 * time.Second},
	}
}

// served is where one request went.
type served struct {
	status            int
	endpoint, cluster string
}

// send posts a completion of prompt with maxTokens output tokens and reads the whole answer.
func (c *sessionClient) send(tenant, session, prompt string, maxTokens int) served {
	c.t.Helper()
	s, err := c.do(tenant, session, prompt, maxTokens)
	if err != nil {
		c.t.Fatal(err)
	}
	return s
}

func (c *sessionClient) do(tenant, session, prompt string, maxTokens int) (served, error) {
	body := fmt.Sprintf(`{"model":%q,"prompt":%q,"max_tokens":%d}`, harness.TestModel, prompt, maxTokens)
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return served{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if session != "" {
		req.Header.Set(contract.HeaderSessionID, session)
	}
	if tenant != "" {
		req.Header.Set(contract.HeaderTenant, tenant)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return served{}, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return served{resp.StatusCode, resp.Header.Get(contract.HeaderEndpoint), resp.Header.Get(contract.HeaderCluster)}, nil
}

// TestSessionStaysOnItsPod runs a multi-turn conversation with one session id through the real
// gateway over four equal pods, interleaved with other conversations: every turn lands on the pod
// of the first (x-switchyard-endpoint) while that pod has room, although no turn repeats another's
// prompt (the prefix-cache scorer has nothing to go on). The same session id from another tenant
// is a conversation of its own, an over-long session id is refused 400 and counted, and the
// gateway's session table is bounded and reported. Turns are 200 ms apart (a user's think time
// is seconds): back to back, a pod's scrape still shows the previous turn running.
func TestSessionStaysOnItsPod(t *testing.T) {
	w := newWorld(t)
	var pods []string
	for range 4 {
		pods = append(pods, w.Pod("h100").Listen)
	}
	gw := w.Gateway("adv-session", "us-east-1", pods)
	c := newSessionClient(t, gw.Listen)
	// Warm up: every pod served and measured, so the predicted-TTFT scorer sees equal pods.
	for i := range 40 {
		if s := c.send("", "", fmt.Sprintf("warm-up %d", i), 2); s.status != http.StatusOK {
			t.Fatalf("warm-up: %d", s.status)
		}
	}
	home := ""
	others := map[string]bool{}
	for turn := range 30 {
		s := c.send("acme", "conv-1", fmt.Sprintf("turn %d of the conversation: a new question", turn), 2)
		if s.status != http.StatusOK || s.endpoint == "" {
			t.Fatalf("turn %d: status %d, endpoint %q", turn, s.status, s.endpoint)
		}
		if home == "" {
			home = s.endpoint
		} else if s.endpoint != home {
			t.Fatalf("turn %d served by %s, want %s (the session's pod, which has room)", turn, s.endpoint, home)
		}
		// Other conversations in between, each on its own session, then the user's think time:
		// longer than a scrape interval, so the pods' metrics no longer show the last turn running.
		o := c.send("acme", fmt.Sprintf("other-%d", turn), fmt.Sprintf("other %d", turn), 2)
		if o.status != http.StatusOK {
			t.Fatalf("other conversation: %d", o.status)
		}
		others[o.endpoint] = true
		time.Sleep(200 * time.Millisecond)
	}
	if len(others) < 2 {
		t.Fatalf("the other conversations all went to %v: the test shows nothing", others)
	}
	const decisions = "switchyard_gateway_session_affinity_decisions_total"
	if got := harness.MetricValue(t, gw.Metrics, decisions, "outcome=stuck"); got < 29 {
		t.Fatalf("%g turns stuck, want at least 29", got)
	}
	// Another tenant naming the same session id starts its own session.
	before := harness.MetricValue(t, gw.Metrics, decisions, "outcome=new")
	if s := c.send("rival", "conv-1", "a rival's turn", 2); s.status != http.StatusOK {
		t.Fatalf("rival: %d", s.status)
	}
	if got := harness.MetricValue(t, gw.Metrics, decisions, "outcome=new"); got != before+1 {
		t.Fatalf("new sessions %g after a rival tenant's conv-1, want %g", got, before+1)
	}
	if n := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_session_affinity_sessions"); n != 32 {
		t.Fatalf("%g sessions held, want 32", n)
	}
	// An over-long session id: 400 naming the header, counted; everyone else still served.
	if s := c.send(
		"acme",
		strings.Repeat("x", contract.MaxSessionID+1),
		"too long",
		2,
	); s.status != http.StatusBadRequest {
		t.Fatalf("over-long session id: %d, want 400", s.status)
	}
	invalid := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_invalid_header_requests_total",
		"header="+contract.HeaderSessionID)
	if invalid != 1 {
		t.Fatalf("invalid session headers counted %g, want 1", invalid)
	}
	if s := c.send("acme", "conv-1", "the last turn", 2); s.status != http.StatusOK || s.endpoint != home {
		t.Fatalf("after the refusal: %d on %s, want 200 on %s", s.status, s.endpoint, home)
	}
}

// TestSessionStaysOnItsCluster runs a conversation through the real global router over two equal
// clusters of one region: the turns are served by the cluster of the first (x-switchyard-cluster)
// and, since the router passes x-session-id on, by the same pod in it, while requests without a
// session id are decided afresh. The router keeps a session where it was while that cluster's
// estimate is within 50% plus 50 ms of the best; a heavily loaded test machine can still make one
// summary's estimate jump beyond that (a stalled step), so up to two of twenty turns may move, and
// the router must count the others as stuck.
func TestSessionStaysOnItsCluster(t *testing.T) {
	w := newWorld(t)
	etcd := w.Etcd()
	w.Gateway("adv-sess-a", "us-east-1", []string{w.Pod("h100").Listen, w.Pod("h100").Listen})
	w.Gateway("adv-sess-b", "us-east-1", []string{w.Pod("h100").Listen, w.Pod("h100").Listen})
	r := w.Router("us-east-1", etcd.URL, "--log-level=debug")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := harness.WaitClusters(ctx, "http://"+r.Admin, w.Token(), 2, 60*time.Second); err != nil {
		t.Fatalf("the router never saw both clusters: %v\n%s", err, r.Log())
	}
	c := newSessionClient(t, r.Listen)
	for i := range 20 {
		if s := c.send("", "", fmt.Sprintf("warm-up %d", i), 2); s.status != http.StatusOK {
			t.Fatalf("warm-up: %d", s.status)
		}
	}
	const turns = 20
	var home served
	away := 0
	for turn := range turns {
		s := c.send("acme", "conv-9", fmt.Sprintf("turn %d of a conversation through the router", turn), 2)
		if s.status != http.StatusOK || s.cluster == "" || s.endpoint == "" {
			t.Fatalf("turn %d: %+v", turn, s)
		}
		switch {
		case turn == 0:
			home = s
		case s.cluster != home.cluster:
			away++
			t.Logf("turn %d served on %s, the session's cluster is %s", turn, s.cluster, home.cluster)
			home = s // the session moved: it sticks to its new cluster
		case s.endpoint != home.endpoint:
			t.Fatalf("turn %d served by %s, want %s (the session's pod in its cluster, which has room)",
				turn, s.endpoint, home.endpoint)
		}
		if o := c.send("", "", fmt.Sprintf("no session %d", turn), 2); o.status != http.StatusOK {
			t.Fatalf("a request without a session: %d", o.status)
		}
		time.Sleep(150 * time.Millisecond)
	}
	if away > 2 {
		t.Fatalf("the session changed cluster %d times in %d turns\n%s", away, turns, r.Log())
	}
	const decisions = "switchyard_router_session_decisions_total"
	if got := harness.MetricValue(t, r.Metrics, decisions, "outcome=stuck"); got < float64(turns-1-away) {
		t.Fatalf("the router counted %g turns stuck, want %d", got, turns-1-away)
	}
	if got := harness.MetricValue(t, r.Metrics, decisions, "outcome=new"); got != 1 {
		t.Fatalf("the router counted %g new sessions, want 1", got)
	}
}

// TestSessionMovesWhenItsPodFills sends one conversation's long turns without waiting for the
// previous ones to finish, over three small-KV pods: pinning would pile them onto one pod, but
// once that pod is full by the gateway's thresholds (KV 0.8, queue 5) the session gets no
// affinity there and moves, so the turns are spread over the pods, the gateway counts moves, and
// no pod's KV cache, sampled throughout from its own metrics, goes above 90%.
func TestSessionMovesWhenItsPodFills(t *testing.T) {
	w := newWorld(t)
	w.TimeScale = 0.5
	var pods []string
	for range 3 {
		pods = append(pods, w.Pod("a10g").Listen) // 30,000 KV tokens each
	}
	gw := w.Gateway("adv-session-fill", "us-east-1", pods)
	c := newSessionClient(t, gw.Listen)
	for i := range 12 {
		if s := c.send("", "", fmt.Sprintf("warm-up %d", i), 2); s.status != http.StatusOK {
			t.Fatalf("warm-up: %d", s.status)
		}
	}
	sampler := sampleKV(pods, 20*time.Millisecond)
	// Each turn: about 3,000 prompt tokens and 300 output tokens, 11% of a pod's KV cache, which
	// it holds for seconds; 18 turns are about twice what one pod holds.
	const turns = 18
	var wg sync.WaitGroup
	results := make([]served, turns)
	errs := make([]error, turns)
	for i := range turns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prompt := fmt.Sprintf("turn %d. %s", i, strings.Repeat("a long document to read again. ", 400))
			results[i], errs[i] = c.do("acme", "conv-long", prompt, 300)
		}()
		time.Sleep(150 * time.Millisecond) // a scrape sees each turn before the next arrives
	}
	wg.Wait()
	peak, err := sampler.stop()
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]int{}
	for i, s := range results {
		if errs[i] != nil || s.status != http.StatusOK {
			t.Fatalf("turn %d: %+v, %v", i, s, errs[i])
		}
		used[s.endpoint]++
	}
	if len(used) < 2 {
		t.Fatalf("every turn went to %v: the session never moved", used)
	}
	for pod, kv := range peak {
		if kv > 0.9 {
			t.Errorf("pod %s reached %.0f%% KV (turns per pod %v)", pod, 100*kv, used)
		}
	}
	if got := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_session_affinity_decisions_total",
		"outcome=moved"); got < 1 {
		t.Fatalf("no move counted (turns per pod %v)", used)
	}
	t.Logf("turns per pod %v, peak KV %v", used, peak)
}

// TestSessionTableBoundedUnderFlood floods a gateway whose session-affinity-scorer holds at most
// 50 sessions with 400 distinct session ids: the table never holds more than its bound, the
// evictions are counted, every request is served, and a conversation that keeps talking through
// the flood is never forgotten (the table is an LRU: the live session is among the most recent).
func TestSessionTableBoundedUnderFlood(t *testing.T) {
	w := newWorld(t)
	var pods []string
	for range 2 {
		pods = append(pods, w.Pod("h100").Listen)
	}
	cfg := w.Write("session-flood.yaml", `apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: saturation-filter
- type: session-affinity-scorer
  parameters: {maxSessions: 50}
- type: predicted-ttft-scorer
- type: max-score-picker
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: saturation-filter
  - {pluginRef: predicted-ttft-scorer, weight: 6}
  - {pluginRef: session-affinity-scorer, weight: 3}
  - pluginRef: max-score-picker
`)
	gw := w.Gateway("adv-session-flood", "us-east-1", pods, "--config="+cfg)
	c := newSessionClient(t, gw.Listen)
	if s := c.send("acme", "live", "the live conversation's first turn", 2); s.status != http.StatusOK {
		t.Fatalf("first turn: %d", s.status)
	}
	const flood, workers = 400, 8
	var wg sync.WaitGroup
	errs := make(chan error, flood)
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < flood; i += workers {
				s, err := c.do("mallory", fmt.Sprintf("flood-%d", i), "x", 1)
				if err == nil && s.status != http.StatusOK {
					err = fmt.Errorf("flood request %d: status %d", i, s.status)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	flooded := make(chan struct{})
	go func() { wg.Wait(); close(flooded) }()
	// The live conversation talks all through the flood, a turn every few of the flood's
	// requests, far fewer than the 49 others the table holds.
	for turn := 0; ; turn++ {
		select {
		case <-flooded:
		default:
			if s := c.send("acme", "live", fmt.Sprintf("live turn %d", turn), 2); s.status != http.StatusOK {
				t.Errorf("live turn %d during the flood: %d", turn, s.status)
			}
			if n := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_session_affinity_sessions"); n > 50 {
				t.Fatalf("%g sessions held during the flood, bound 50", n)
			}
			continue
		}
		break
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_session_affinity_sessions"); n != 50 {
		t.Fatalf("%g sessions held after the flood, want the bound, 50", n)
	}
	// The live conversation was never evicted: its turns count as stuck or moved (the flood's load
	// may outweigh its pod), never as a new session.
	const decisions = "switchyard_gateway_session_affinity_decisions_total"
	newBefore := harness.MetricValue(t, gw.Metrics, decisions, "outcome=new")
	if s := c.send("acme", "live", "the live conversation after the flood", 2); s.status != http.StatusOK {
		t.Fatalf("live turn after the flood: %d", s.status)
	}
	if got := harness.MetricValue(t, gw.Metrics, decisions, "outcome=new"); got != newBefore {
		t.Fatalf("the live conversation was forgotten by the flood (new sessions %g, was %g)", got, newBefore)
	}
	evicted := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_session_affinity_evictions_total",
		"reason=capacity")
	if evicted < flood-50 {
		t.Fatalf("%g sessions evicted for capacity, want at least %d", evicted, flood-50)
	}
	if b := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_session_affinity_bytes"); b <= 0 || b > 50*512 {
		t.Fatalf("session table charged %g bytes for 50 sessions", b)
	}
}

// kvSampler reads the pods' vllm:kv_cache_usage_perc until stopped and keeps each pod's peak.
type kvSampler struct {
	cancel context.CancelFunc
	done   chan struct{}
	peak   map[string]float64
	err    error
}

func sampleKV(pods []string, every time.Duration) *kvSampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &kvSampler{cancel: cancel, done: make(chan struct{}), peak: map[string]float64{}}
	client := &http.Client{Timeout: 5 * time.Second}
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			for _, p := range pods {
				kv, err := podKV(ctx, client, p)
				if err != nil && ctx.Err() == nil {
					s.err = err
					return
				}
				s.peak[p] = max(s.peak[p], kv)
			}
			select {
			case <-ctx.Done():
			case <-time.After(every):
			}
		}
	}()
	return s
}

// stop ends the sampling and returns each pod's peak KV use.
func (s *kvSampler) stop() (map[string]float64, error) {
	s.cancel()
	<-s.done
	return s.peak, s.err
}

// podKV reads a modelsim pod's KV cache use from its /metrics.
func podKV(ctx context.Context, client *http.Client, pod string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pod+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", pod, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "vllm:kv_cache_usage_perc") {
			continue
		}
		return strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
	}
	return 0, fmt.Errorf("scrape %s: no vllm:kv_cache_usage_perc", pod)
}
