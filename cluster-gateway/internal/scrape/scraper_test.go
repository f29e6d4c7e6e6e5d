package scrape_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/contract/poll"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scrape"
)

// testConfig scrapes fast so tests finish quickly.
func testConfig() scrape.Config {
	cfg := scrape.DefaultConfig()
	cfg.Interval = 5 * time.Millisecond
	cfg.Timeout = 2 * time.Second
	cfg.ModelsInterval = 50 * time.Millisecond
	cfg.RetryModels = 20 * time.Millisecond
	return cfg
}

// startScraper runs a scraper over store until the test ends.
func startScraper(t *testing.T, store *datastore.Store, reg prometheus.Registerer) *scrape.Scraper {
	t.Helper()
	s, err := scrape.New(testConfig(), store, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return s
}

// waitTimeout bounds every wait for a condition in these tests (poll.Until): generous, as a
// busy machine is slow.
const waitTimeout = 10 * time.Second

func TestScraperEngines(t *testing.T) {
	servers := map[datastore.Engine]*fakeServer{
		datastore.EngineVLLM: newFakeServer(t, datastore.EngineVLLM, vllmModels),
		datastore.EngineSGLang: newFakeServer(
			t,
			datastore.EngineSGLang,
			`{"data":[{"id":"qwen","root":"qwen","parent":null}]}`,
		),
		datastore.EngineTRTLLM: newFakeServer(t, datastore.EngineTRTLLM, `{"data":[{"id":"mistral"}]}`),
	}
	store := datastore.NewStore(nil, nil)
	var specs []datastore.EndpointSpec
	for engine, f := range servers {
		f.queue.Store(7)
		specs = append(specs, datastore.EndpointSpec{Address: f.addr(), Engine: engine})
	}
	store.Sync(specs)
	startScraper(t, store, nil)

	for engine, f := range servers {
		t.Run(string(engine), func(t *testing.T) {
			ep := store.Get(f.addr())
			poll.Until(t, waitTimeout, func() bool {
				m := ep.Metrics()
				return m != nil && m.WaitingQueue == 7 && ep.Models() != nil
			}, "metrics and models")
			f.queue.Store(11)
			poll.Until(t, waitTimeout, func() bool { return ep.Metrics().WaitingQueue == 11 }, "updated queue")
			if age := ep.MetricsAge(time.Now()); age > 5*time.Second {
				t.Fatalf("metrics age %v", age)
			}
		})
	}
	vllm := store.Get(servers[datastore.EngineVLLM].addr())
	m := vllm.Metrics()
	if m.Running != 1 || m.KVTotalTokens() != 16000 || !slices.Equal(m.ActiveAdapters, []string{"sql"}) || m.MaxLoRA != 2 {
		t.Fatalf("vllm metrics %+v", m)
	}
	if got := store.Models(); !slices.Equal(got, []string{"llama", "mistral", "qwen", "sql"}) {
		t.Fatalf("store models %v", got)
	}
}

func TestScraperFollowsStore(t *testing.T) {
	a := newFakeServer(t, datastore.EngineVLLM, vllmModels)
	b := newFakeServer(t, datastore.EngineVLLM, vllmModels)
	store := datastore.NewStore(nil, nil)
	store.Sync([]datastore.EndpointSpec{{Address: a.addr()}})
	startScraper(t, store, nil)
	poll.Until(t, waitTimeout, func() bool { return store.Get(a.addr()).Metrics() != nil }, "a scraped")

	store.Sync([]datastore.EndpointSpec{{Address: b.addr()}})
	poll.Until(t, waitTimeout, func() bool { return store.Get(b.addr()).Metrics() != nil }, "b scraped")
	// After removal a's loop stops: its scrape count settles.
	time.Sleep(50 * time.Millisecond)
	before := a.scrapes.Load()
	time.Sleep(100 * time.Millisecond)
	if after := a.scrapes.Load(); after != before {
		t.Fatalf("removed endpoint still scraped: %d -> %d", before, after)
	}
	// One keep-alive connection per pod, reused across scrapes.
	poll.Until(t, waitTimeout, func() bool { return b.scrapes.Load() >= 10 }, "several scrapes of b")
	if n := b.newConns.Load(); n != 1 {
		t.Fatalf("pod b saw %d connections, want 1 reused", n)
	}
}

func TestFailingPodMetricsAge(t *testing.T) {
	f := newFakeServer(t, datastore.EngineVLLM, vllmModels)
	store := datastore.NewStore(nil, nil)
	store.Sync([]datastore.EndpointSpec{{Address: f.addr()}})
	reg := prometheus.NewRegistry()
	startScraper(t, store, reg)
	ep := store.Get(f.addr())
	poll.Until(t, waitTimeout, func() bool { return ep.Metrics() != nil }, "first scrape")
	if ep.Stale(time.Now(), 2*time.Second) {
		t.Fatal("fresh endpoint reported stale")
	}

	f.fail.Store(true)
	poll.Until(t, waitTimeout, func() bool { return ep.ScrapeFailures() > 0 }, "failure recorded")
	age1 := ep.MetricsAge(time.Now())
	time.Sleep(50 * time.Millisecond)
	age2 := ep.MetricsAge(time.Now())
	if age2 <= age1 || !ep.Stale(time.Now(), 2*time.Second) {
		t.Fatalf("failing pod: age %v then %v, stale=%v", age1, age2, ep.Stale(time.Now(), 2*time.Second))
	}
	n, err := testutil.GatherAndCount(
		reg,
		"switchyard_gateway_scrape_errors_total",
		"switchyard_gateway_endpoint_metrics_age_seconds",
	)
	if err != nil || n != 2 {
		t.Fatalf("gathered %d series, err %v", n, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "switchyard_gateway_endpoint_metrics_age_seconds" {
			if v := mf.GetMetric()[0].GetGauge().GetValue(); v < age2.Seconds() {
				t.Fatalf("exported age %v < %v", v, age2.Seconds())
			}
		}
	}

	f.fail.Store(false)
	poll.Until(t, waitTimeout, func() bool { return !ep.Stale(time.Now(), 2*time.Second) }, "recovery")
}

func TestScraperUnreachablePod(t *testing.T) {
	f := newFakeServer(t, datastore.EngineVLLM, vllmModels)
	addr := f.addr()
	f.srv.Close() // nothing listens there any more
	store := datastore.NewStore(nil, nil)
	store.Sync([]datastore.EndpointSpec{{Address: addr}})
	startScraper(t, store, nil)
	ep := store.Get(addr)
	poll.Until(t, waitTimeout, func() bool { return ep.ScrapeFailures() >= 3 }, "failures")
	if ep.Metrics() != nil || !ep.Stale(time.Now(), 2*time.Second) {
		t.Fatal("unreachable pod has metrics or is not stale")
	}
}

func TestParseModels(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		base     string
		adapters []string
		wantErr  string
	}{
		{"vllm base and adapters", vllmModels, "llama", []string{"sql"}, ""},
		{"parent equal to id", `{"data":[{"id":"a","parent":"a"},{"id":"x","parent":"a"}]}`, "a", []string{"x"}, ""},
		{"adapter listed first", `{"data":[{"id":"x","parent":"a"},{"id":"a"}]}`, "a", []string{"x"}, ""},
		{"served-model-name aliases", `{"data":[{"id":"a"},{"id":"a-alias"}]}`, "a", []string{"a-alias"}, ""},
		{"no base", `{"data":[{"id":"x","parent":"a"}]}`, "", nil, "no base model"},
		{"empty", `{"data":[]}`, "", nil, "no base model"},
		{"bad json", `{"data":`, "", nil, "decode models"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := scrape.ParseModels(strings.NewReader(tt.body))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Base != tt.base || !slices.Equal(m.Adapters, tt.adapters) {
				t.Fatalf("got %q %v", m.Base, m.Adapters)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	cfg := scrape.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	intervals := []struct {
		n    int
		want time.Duration
	}{{0, 50 * time.Millisecond}, {250, 50 * time.Millisecond}, {500, 100 * time.Millisecond},
		{1000, 200 * time.Millisecond}, {100000, time.Second}}
	for _, tt := range intervals {
		if got := cfg.IntervalFor(tt.n); got != tt.want {
			t.Errorf("IntervalFor(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
	bad := []struct {
		name   string
		mutate func(*scrape.Config)
		field  string
	}{
		{"interval", func(c *scrape.Config) { c.Interval = 0 }, "Interval"},
		{"max interval", func(c *scrape.Config) { c.MaxInterval = time.Millisecond }, "MaxInterval"},
		{"jitter", func(c *scrape.Config) { c.Jitter = 1 }, "Jitter"},
		{"timeout", func(c *scrape.Config) { c.Timeout = 0 }, "Timeout"},
		{"path", func(c *scrape.Config) { c.MetricsPath = "metrics" }, "MetricsPath"},
		{"body", func(c *scrape.Config) { c.MaxBodyBytes = 0 }, "MaxBodyBytes"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			c := scrape.DefaultConfig()
			tt.mutate(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Validate() = %v, want error naming %s", err, tt.field)
			}
		})
	}
}
