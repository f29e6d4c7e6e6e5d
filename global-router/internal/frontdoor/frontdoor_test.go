package frontdoor_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/poll"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
	"github.com/switchyard-dev/switchyard/gossip"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// fleet is a set of fake gateways and the gossip view of them.
type fleet struct {
	summaries atomic.Pointer[[]gossip.Summary]
	hits      map[string]*atomic.Int64
	last      atomic.Pointer[string] // the path and body of the last request a gateway got
}

func (f *fleet) Snapshot() []gossip.Summary { return *f.summaries.Load() }

type policies map[string]routing.Policy

func (p policies) Policy(model string) (routing.Policy, error) {
	if pol, ok := p[model]; ok {
		return pol, nil
	}
	return routing.DefaultPolicy(), nil
}

type clusterSpec struct {
	name, region string
	kvUsed       float64
	status       int // answer status; 0 = 200 stream
}

func newFleet(t *testing.T, specs ...clusterSpec) *fleet { return newFleetDelayed(t, nil, specs...) }

// newFleetDelayed is newFleet whose gateways send Server-Timing, so the router measures their
// round trips, and hold each answer back by netDelay[cluster] without counting it there: to the
// router it looks like a slow network path. newFleet's gateways send none (a gateway behind
// Envoy): their loopback round trips would otherwise replace the configured ones.
func newFleetDelayed(t *testing.T, netDelay map[string]time.Duration, specs ...clusterSpec) *fleet {
	f := &fleet{hits: map[string]*atomic.Int64{}}
	var sums []gossip.Summary
	for _, c := range specs {
		hits := &atomic.Int64{}
		f.hits[c.name] = hits
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			b, _ := io.ReadAll(r.Body)
			last := r.URL.Path + " " + string(b)
			f.last.Store(&last)
			if netDelay != nil { // measured: otherwise the configured RTTs hold
				time.Sleep(netDelay[c.name])
				w.Header().Set("Server-Timing", "gateway;dur=0.050")
			}
			w.Header().Set("X-Switchyard-Cluster", c.name)
			w.Header().Set("X-Switchyard-Region", c.region)
			if c.status != 0 {
				if c.status == 429 {
					w.Header().Set("X-Switchyard-Overflow", "1")
				}
				w.WriteHeader(c.status)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"hi\"}]}\n\ndata: [DONE]\n\n")
		}))
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetHTTP1(true)
		srv.Config.Protocols.SetUnencryptedHTTP2(true) // gateways accept h2c from routers
		srv.Start()
		t.Cleanup(srv.Close)
		total := uint64(1_000_000)
		sums = append(sums, gossip.Summary{
			Node: c.name + "-gw", Cluster: c.name, Region: c.region, State: gossip.StateAlive,
			Summary: &gossipv1.CapacitySummary{
				Cluster: c.name, Region: c.region, GatewayUrl: srv.URL, GeneratedAtUnixNano: time.Now().UnixNano(),
				Models: []*gossipv1.ModelCapacity{{
					Name: "llama", ReadyPods: 4, TotalKvTokens: total, FreeKvTokens: uint64((1 - c.kvUsed) * float64(total)),
					PredictedTtftMs: 60, PrefillTokensPerSecond: 80_000,
					Adapters: []*gossipv1.AdapterCapacity{{Name: "sql-lora", ResidentPods: 1}},
				}},
			},
		})
	}
	f.summaries.Store(&sums)
	return f
}

func router(t *testing.T, f *fleet, pol policies) string {
	t.Helper()
	return routerWith(t, f, pol, frontdoor.DefaultConfig().Options, nil)
}

// routerWith starts a us-east-1 front door over f with the given routing options, registering its
// metrics on reg (nil: not registered).
func routerWith(t *testing.T, f *fleet, pol policies, opt routing.Options, reg prometheus.Registerer) string {
	t.Helper()
	tb := clustertable.New(clustertable.Config{Region: "us-east-1", RTT: map[string]time.Duration{
		"us-west-2": 70 * time.Millisecond, "eu-west-1": 80 * time.Millisecond}}, f, nil)
	fwd, err := forward.New(forward.DefaultConfig(), tb)
	if err != nil {
		t.Fatal(err)
	}
	cfg := frontdoor.DefaultConfig()
	cfg.Region = "us-east-1"
	cfg.QueueWait = 200 * time.Millisecond
	cfg.Options = opt
	srv := httptest.NewUnstartedServer(frontdoor.New(cfg, tb, pol, fwd, nil, frontdoor.NewMetrics(reg)).Handler())
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true) // clients may speak h2c, as to the real router
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const okBody = `{"model":"llama","prompt":"hello there","stream":true}`

func TestRouting(t *testing.T) {
	tests := []struct {
		name        string
		specs       []clusterSpec
		pol         policies
		body        string
		wantStatus  int
		wantCluster string
		wantRoute   string
		wantInBody  string
	}{
		{
			"local first",
			[]clusterSpec{{"east", "us-east-1", 0.3, 0}, {"west", "us-west-2", 0, 0}},
			nil,
			okBody,
			200,
			"east",
			"local",
			"[DONE]",
		},
		{"adapter routes to its base model's clusters", []clusterSpec{{"east", "us-east-1", 0.3, 0}}, nil,
			`{"model":"sql-lora","messages":[{"role":"user","content":"hi"}]}`, 200, "east", "local", ""},
		{
			"overflow when local is full",
			[]clusterSpec{{"east", "us-east-1", 1, 0}, {"west", "us-west-2", 0.1, 0}},
			nil,
			okBody,
			200,
			"west",
			"overflow",
			"",
		},
		{
			"retry when a cluster refuses with 503",
			[]clusterSpec{{"east", "us-east-1", 0.1, 503}, {"west", "us-west-2", 0.1, 0}},
			nil,
			okBody,
			200,
			"west",
			"retry",
			"",
		},
		{
			"residency fails closed",
			[]clusterSpec{{"east", "us-east-1", 0.1, 0}},
			policies{
				"llama": {OverflowThreshold: 0.8, AllowedRegions: []string{"eu-west-1"}},
			},
			okBody,
			503,
			"",
			"",
			"residency_policy",
		},
		{
			"unknown model is 404",
			[]clusterSpec{{"east", "us-east-1", 0.1, 0}},
			nil,
			`{"model":"nope","prompt":"x"}`,
			404,
			"",
			"",
			"model_not_found",
		},
		{"malformed JSON is 400", []clusterSpec{{"east", "us-east-1", 0.1, 0}}, nil, `{"model":`, 400, "", "", "malformed"},
		{
			"missing model is 400",
			[]clusterSpec{{"east", "us-east-1", 0.1, 0}},
			nil,
			`{"prompt":"x"}`,
			400,
			"",
			"",
			"model parameter",
		},
		{
			"no room anywhere is 429 after a bounded wait",
			[]clusterSpec{{"east", "us-east-1", 0.1, 429}, {"west", "us-west-2", 0.1, 429}},
			nil,
			okBody,
			429,
			"",
			"",
			"no_capacity",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleet(t, tt.specs...)
			resp, body := post(t, router(t, f, tt.pol), tt.body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d (body %s)", resp.StatusCode, tt.wantStatus, body)
			}
			if got := resp.Header.Get("X-Switchyard-Cluster"); got != tt.wantCluster {
				t.Errorf("cluster %q, want %q", got, tt.wantCluster)
			}
			if got := resp.Header.Get("X-Switchyard-Route"); got != tt.wantRoute {
				t.Errorf("route %q, want %q", got, tt.wantRoute)
			}
			if !strings.Contains(body, tt.wantInBody) {
				t.Errorf("body %q does not contain %q", body, tt.wantInBody)
			}
			if tt.wantStatus == 429 &&
				(resp.Header.Get("Retry-After") == "" || resp.Header.Get("X-Switchyard-Overflow") != "1") {
				t.Errorf("429 without Retry-After / overflow header: %v", resp.Header)
			}
		})
	}
}

// The residency refusal lists every candidate with its reason's text and, beside it, its
// machine code, in the OpenAI error shape both tiers write (param null when empty).
func TestResidencyRefusalListsCandidates(t *testing.T) {
	f := newFleet(t, clusterSpec{"east", "us-east-1", 0.1, 0})
	resp, body := post(
		t,
		router(t, f, policies{"llama": {OverflowThreshold: 0.8, AllowedRegions: []string{"eu-west-1"}}}),
		okBody,
	)
	want := `{"error":{"message":"no cluster serving ` + "`llama`" + ` is in a region its policy allows (serving ` +
		`regions: us-east-1)",` +
		`"type":"service_unavailable","param":null,"code":"residency_policy","candidates":[` +
		`{"cluster":"east","region":"us-east-1","eligible":false,"reason":"region not allowed by ` +
		`policy","reason_code":"region_not_allowed"}]}}` + "\n"
	if resp.StatusCode != http.StatusServiceUnavailable || body != want {
		t.Fatalf("status %d body\n%s\nwant\n%s", resp.StatusCode, body, want)
	}
	var doc struct {
		Error struct {
			Code       contract.Reason `json:"code"`
			Candidates []struct {
				Reason     string          `json:"reason"`
				ReasonCode contract.Reason `json:"reason_code"`
			} `json:"candidates"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	if c := doc.Error.Candidates; doc.Error.Code != contract.ReasonResidencyPolicy || len(c) != 1 ||
		c[0].ReasonCode != contract.ReasonRegionNotAllowed || c[0].Reason != contract.ReasonRegionNotAllowed.Text() {
		t.Fatalf("decoded %+v", doc)
	}
}

func TestResidencyNeverLeavesAllowedRegions(t *testing.T) {
	f := newFleet(
		t,
		clusterSpec{"east", "us-east-1", 1, 0},
		clusterSpec{"west", "us-west-2", 0, 0},
		clusterSpec{"eu", "eu-west-1", 0.5, 0},
	)
	url := router(t, f, policies{"llama": {OverflowThreshold: 0.8, AllowedRegions: []string{"us-east-1", "eu-west-1"}}})
	for range 20 {
		resp, _ := post(t, url, okBody)
		if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Region") == "us-west-2" {
			t.Fatalf("status %d region %s", resp.StatusCode, resp.Header.Get("X-Switchyard-Region"))
		}
	}
	if n := f.hits["west"].Load(); n != 0 {
		t.Fatalf("%d requests reached a region outside the policy", n)
	}
}

func TestLocalOnlyNeverOverflows(t *testing.T) {
	opt := frontdoor.DefaultConfig().Options
	opt.LocalOnly = true
	tests := []struct {
		name       string
		east       clusterSpec
		wantStatus int
	}{
		{"over the threshold stays local", clusterSpec{"east", "us-east-1", 0.9, 0}, 200},
		{"refused locally waits then 429", clusterSpec{"east", "us-east-1", 0.1, 429}, 429},
		{"saturated locally waits then 429", clusterSpec{"east", "us-east-1", 1, 0}, 429},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleet(t, tt.east, clusterSpec{"west", "us-west-2", 0, 0})
			url := routerWith(t, f, nil, opt, nil)
			for range 5 {
				resp, body := post(t, url, okBody)
				if resp.StatusCode != tt.wantStatus {
					t.Fatalf("status %d, want %d (body %s)", resp.StatusCode, tt.wantStatus, body)
				}
			}
			if n := f.hits["west"].Load(); n != 0 {
				t.Fatalf("%d requests left the region in local-only mode", n)
			}
		})
	}
}

// TestSpilloverOverflowsToTheNearestRegion runs the spillover mode through the front door: home
// while under the overflow threshold, else every request to the nearest region by round trip
// (us-west-2 at 70 ms, not eu-west-1 at 80 ms, which the estimates rank about the same and power
// of d would share with it), and a refusal there retried by round trip.
func TestSpilloverOverflowsToTheNearestRegion(t *testing.T) {
	opt := frontdoor.DefaultConfig().Options
	opt.Spillover = true
	tests := []struct {
		name        string
		specs       []clusterSpec
		wantCluster string
		wantRoute   string
	}{
		{
			"under the threshold stays home",
			[]clusterSpec{{"east", "us-east-1", 0.75, 0}, {"west", "us-west-2", 0, 0}, {"eu", "eu-west-1", 0, 0}},
			"east",
			"local",
		},
		{
			"over it goes to the nearest region",
			[]clusterSpec{{"east", "us-east-1", 0.85, 0}, {"west", "us-west-2", 0.3, 0}, {"eu", "eu-west-1", 0, 0}},
			"west",
			"overflow",
		},
		{
			"a refusal there is retried at home, the next nearest",
			[]clusterSpec{{"east", "us-east-1", 0.85, 0}, {"west", "us-west-2", 0, 429},
				{"eu", "eu-west-1", 0, 0}},
			"east",
			"retry",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleet(t, tt.specs...)
			url := routerWith(t, f, nil, opt, nil)
			for range 10 {
				resp, body := post(t, url, okBody)
				if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Cluster") != tt.wantCluster ||
					resp.Header.Get("X-Switchyard-Route") != tt.wantRoute {
					t.Fatalf(
						"status %d cluster %s route %s, want 200 %s %s (body %s)",
						resp.StatusCode,
						resp.Header.Get(
							"X-Switchyard-Cluster",
						),
						resp.Header.Get("X-Switchyard-Route"),
						tt.wantCluster,
						tt.wantRoute,
						body,
					)
				}
			}
			if n := f.hits["eu"].Load(); n != 0 {
				t.Fatalf("%d requests went past the nearest regions to eu-west-1", n)
			}
		})
	}
}

func TestOverflowAnsweredCountsHowTheClusterRanked(t *testing.T) {
	tests := []struct {
		name  string
		specs []clusterSpec
		want  string
	}{
		{"local answers: not counted", []clusterSpec{{"east", "us-east-1", 0.1, 0}, {"west", "us-west-2", 0, 0}}, ""},
		{
			"overflow to the best estimate",
			[]clusterSpec{{"east", "us-east-1", 1, 0}, {"west", "us-west-2", 0, 0}, {"eu", "eu-west-1", 0.95, 0}},
			"best",
		},
		{
			"retry after the best refused",
			[]clusterSpec{{"east", "us-east-1", 1, 0}, {"west", "us-west-2", 0, 503}, {"eu", "eu-west-1", 0.95, 0}},
			"other",
		},
		{"no local cluster", []clusterSpec{{"west", "us-west-2", 0, 0}}, "best"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			opt := frontdoor.DefaultConfig().Options
			opt.NearBest = 0 // the best only: the outcome does not depend on power-of-d's draws
			url := routerWith(t, newFleet(t, tt.specs...), nil, opt, reg)
			const n = 4
			for range n {
				if resp, body := post(t, url, okBody); resp.StatusCode != 200 {
					t.Fatalf("status %d (body %s)", resp.StatusCode, body)
				}
			}
			counts := map[string]int{"best": 0, "near_best": 0, "other": 0}
			if tt.want != "" {
				counts[tt.want] = n
			}
			want := "# HELP switchyard_router_overflow_answered_total Requests answered by a cluster outside the router's " +
				"region, by how that cluster ranked in the router's estimates at decision time: best (lowest estimated TTFT), " +
				"near_best (within the near-best window) or other.\n# TYPE switchyard_router_overflow_answered_total counter\n"
			for _, c := range []string{"best", "near_best", "other"} {
				want += fmt.Sprintf("switchyard_router_overflow_answered_total{choice=%q} %d\n", c, counts[c])
			}
			// The handler counts after the answer's last byte has left: poll.
			poll.UntilNil(t, waitTimeout, func() error {
				return testutil.GatherAndCompare(reg, strings.NewReader(want), "switchyard_router_overflow_answered_total")
			}, "the overflow answers counted")
			// Why each request left: east is saturated (unavailable), or there is no east.
			reasons := map[string]float64{}
			if tt.want != "" {
				reasons["unavailable"] = n
				if len(tt.specs) == 1 {
					reasons = map[string]float64{"no_local": n}
				}
			}
			for _, r := range []string{"past_throughput", "remote_sooner", "over_threshold", "unavailable", "no_local"} {
				if got := counterValue(t, reg, "switchyard_router_overflow_reason_total", "reason", r); got != reasons[r] {
					t.Errorf("overflow reason %s = %v, want %v", r, got, reasons[r])
				}
			}
		})
	}
}

// counterValue returns the value of the counter name{label="value"} gathered from reg.
func counterValue(t *testing.T, reg prometheus.Gatherer, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{%s=%q}", name, label, value)
	return 0
}

func TestModelsUnionOverFreshClusters(t *testing.T) {
	f := newFleet(t, clusterSpec{"east", "us-east-1", 0.1, 0})
	resp, err := http.Get(router(t, f, nil) + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data []struct{ ID string } `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Data) != 2 || out.Data[0].ID != "llama" || out.Data[1].ID != "sql-lora" {
		t.Fatalf("models = %+v", out.Data)
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(okBody))
	f.Add([]byte(`{"model":"m","messages":[{"content":[{"type":"text","text":"hi"}]}]}`))
	f.Add([]byte(`{"model":"m","input":["a","b"]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(string(body)))
		srv := frontdoor.New(frontdoor.DefaultConfig(), emptyTable{}, policies{}, nil, nil, nil)
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != 400 && rec.Code != 404 {
			t.Fatalf("status %d for %q", rec.Code, body)
		}
	})
}

type emptyTable struct{}

func (emptyTable) View(string, []uint64) []clustertable.Entry { return nil }
func (emptyTable) Claim([]clustertable.Entry)                 {}
func (emptyTable) Release([]clustertable.Entry, int)          {}

func (emptyTable) Route(
	string, []uint64, routing.Policy, routing.Request, routing.Options, rand.Source,
) ([]clustertable.Entry, routing.Decision, error) {
	return nil, routing.Decision{}, routing.ErrNoCandidate
}

// recordTargets is a forwarder that answers 200 at once and keeps the targets it was given.
type recordTargets struct {
	mu      sync.Mutex
	targets [][]forward.Target
}

func (f *recordTargets) Forward(
	w http.ResponseWriter,
	_ *http.Request,
	_ []byte,
	targets []forward.Target,
	_ forward.Retarget,
) error {
	f.mu.Lock()
	f.targets = append(f.targets, targets)
	f.mu.Unlock()
	w.WriteHeader(http.StatusOK)
	return nil
}

// Every forward target carries the request's estimated prompt length (about four bytes per
// token), the work the cluster table weighs its in-flight requests by.
func TestTargetsCarryPromptTokens(t *testing.T) {
	fwd := &recordTargets{}
	h := benchFrontDoor(benchTable("http://127.0.0.1:1"), fwd).Handler()
	prompt := strings.Repeat("abcd", 750)
	for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
		var body string
		if path == "/v1/completions" {
			body = `{"model":"llama","prompt":"` + prompt + `"}`
		} else {
			body = `{"model":"llama","messages":[{"role":"user","content":"` + prompt + `"}]}`
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: status %d: %s", path, rec.Code, rec.Body)
		}
	}
	if len(fwd.targets) != 2 {
		t.Fatalf("forwarded %d requests, want 2", len(fwd.targets))
	}
	for i, ts := range fwd.targets {
		if len(ts) == 0 {
			t.Fatalf("request %d: no targets", i)
		}
		for _, tg := range ts {
			// the chat prompt is the message text, perhaps with its role: at least the content's 750 tokens.
			if tg.PromptTokens < 750 || tg.PromptTokens > 800 {
				t.Errorf("request %d: target %s carries %d prompt tokens, want about 750", i, tg.Cluster, tg.PromptTokens)
			}
		}
	}
}

// At debug level every decision is logged with the chosen cluster and each eligible cluster's
// estimate; at info level nothing is.
func TestDecisionLoggedAtDebug(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var buf bytes.Buffer
		cfg := frontdoor.DefaultConfig()
		cfg.Region = "us-east-1"
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))
		h := frontdoor.New(cfg, benchTable("http://127.0.0.1:1"), policies{}, &recordTargets{}, log, nil).Handler()
		rec := httptest.NewRecorder()
		h.ServeHTTP(
			rec,
			httptest.NewRequest(
				http.MethodPost,
				"/v1/completions",
				strings.NewReader(`{"model":"llama","prompt":"`+strings.Repeat("abcd", 100)+`"}`),
			),
		)
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		got := buf.String()
		if level == slog.LevelInfo {
			if strings.Contains(got, "route decision") {
				t.Fatalf("decision logged at info level: %s", got)
			}
			continue
		}
		for _, want := range []string{"route decision", "model=llama", "prompt_tokens=100", "chosen=east-", "route=local",
			"east-a=", "west-b="} {
			if !strings.Contains(got, want) {
				t.Errorf("log lacks %q: %s", want, got)
			}
		}
	}
}

// releaseRecorder is a table that records what each routed view's Release was told.
type releaseRecorder struct {
	*clustertable.Table
	mu   sync.Mutex
	used []string
}

func (r *releaseRecorder) Release(view []clustertable.Entry, used int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := ""
	if used >= 0 {
		name = view[used].Cluster.Name
	}
	r.used = append(r.used, name)
	r.Table.Release(view, used)
}

// Every routed view is released, naming the cluster the request was sent to, so the probe turns
// of the others are given back.
func TestViewReleasedWithTheChosenCluster(t *testing.T) {
	tb := &releaseRecorder{Table: benchTable("http://127.0.0.1:1")}
	fwd := &recordTargets{}
	cfg := frontdoor.DefaultConfig()
	cfg.Region = "us-east-1"
	h := frontdoor.New(cfg, tb, policies{}, fwd, nil, nil).Handler()
	for range 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(
			rec,
			httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(`{"model":"llama","prompt":"hello"}`)),
		)
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
	}
	if len(tb.used) != 3 || len(fwd.targets) != 3 {
		t.Fatalf("released %d views for %d requests", len(tb.used), len(fwd.targets))
	}
	for i, name := range tb.used {
		if name == "" || name != fwd.targets[i][0].Cluster {
			t.Errorf("request %d: released naming %q, sent to %q", i, name, fwd.targets[i][0].Cluster)
		}
	}
}
