package publish_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/publish"
	"github.com/switchyard-dev/switchyard/contract/poll"
)

// harness is a publisher over two pods of model "m" with a fake clock and a recording sink.
type harness struct {
	clk    *clock
	view   *datastore.Store
	sink   *recordingSink
	speeds fakeSpeeds
	reg    *prometheus.Registry
	p      *publish.Publisher
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{clk: newClock(), sink: &recordingSink{}, speeds: fakeSpeeds{}, reg: prometheus.NewRegistry()}
	h.view = newView(t, h.clk.Now(), podSpec{base: "m", m: kv(1, 0, 0.5)}, podSpec{base: "m", m: kv(1, 0, 0.5)})
	p, err := publish.New(
		testConfig(),
		h.view.View(),
		h.sink,
		publish.Options{Now: h.clk.Now, Registerer: h.reg, Speeds: h.speeds},
	)
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	h.step(t, true)
	return h
}

// set replaces pod i's state (scraped at the clock's now).
func (h *harness) set(i int, sp podSpec) { setPod(h.view.Get(addr(i)), sp, h.clk.Now()) }

// step runs one Step and checks whether it published.
func (h *harness) step(t *testing.T, want bool) {
	t.Helper()
	before := h.sink.count()
	published, err := h.p.Step()
	if err != nil {
		t.Fatalf("Step: %v", err)
	}
	if published != want || h.sink.count()-before != b2i(want) {
		t.Fatalf(
			"at +%v: published %v (sink got %d), want %v",
			h.clk.Now().Sub(epoch),
			published,
			h.sink.count()-before,
			want,
		)
	}
}

// slower sets every pod's learned prefill speed (tokens/s); decode stays at 50 tokens/s.
func (h *harness) slower(prefill float64) {
	for _, e := range h.view.Endpoints() {
		h.speeds[e.Address] = [2]float64{prefill, 50}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Each pod holds 1,600 KV tokens (3,200 for the model), so 5% of the total is 160 tokens: a KV
// use moving by 0.1 on one pod frees 160 tokens (not more than 5%), by 0.11 frees 176.
func TestChangeDetection(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, h *harness)
		want   bool
	}{
		{"nothing moved", func(*testing.T, *harness) {}, false},
		{"free KV within 5%", func(_ *testing.T, h *harness) { h.set(0, podSpec{base: "m", m: kv(1, 0, 0.4)}) }, false},
		{"free KV beyond 5%", func(_ *testing.T, h *harness) { h.set(0, podSpec{base: "m", m: kv(1, 0, 0.39)}) }, true},
		{"queue up by 2", func(_ *testing.T, h *harness) { h.set(0, podSpec{base: "m", m: kv(3, 0, 0.5)}) }, false},
		{"queue up by 3", func(_ *testing.T, h *harness) { h.set(0, podSpec{base: "m", m: kv(4, 0, 0.5)}) }, true},
		{"running moved", func(_ *testing.T, h *harness) { h.set(0, podSpec{base: "m", m: kv(1, 30, 0.5)}) }, false},
		{
			"pod ejected",
			func(_ *testing.T, h *harness) { h.set(1, podSpec{base: "m", m: kv(1, 0, 0.5), ejected: true}) },
			true,
		},
		{"pod turned saturated", func(t *testing.T, h *harness) {
			h.set(0, podSpec{base: "m", m: kv(1, 0, 0.75)})
			h.step(t, true)
			h.clk.Advance(300 * time.Millisecond)
			h.set(0, podSpec{base: "m", m: kv(1, 0, 0.8)}) // 80 tokens less free, but now saturated
		}, true},
		{"adapter loaded", func(_ *testing.T, h *harness) {
			h.set(0, podSpec{base: "m", adapters: []string{"x"}, m: kv(1, 0, 0.5)})
		}, true},
		{"model added", func(_ *testing.T, h *harness) { h.set(1, podSpec{base: "n", m: kv(1, 0, 0.5)}) }, true},
		{"prefill 10% slower: TTFT within 25%", func(_ *testing.T, h *harness) { h.slower(9000) }, false},
		{"prefill half as fast: TTFT beyond 25%", func(_ *testing.T, h *harness) { h.slower(5000) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.clk.Advance(300 * time.Millisecond)
			tt.change(t, h)
			h.step(t, tt.want)
		})
	}
}

func TestSmallMovesAccumulate(t *testing.T) {
	h := newHarness(t)
	for _, usage := range []float64{0.45, 0.42} { // 80 then 128 tokens from the published 0.5
		h.clk.Advance(300 * time.Millisecond)
		h.set(0, podSpec{base: "m", m: kv(1, 0, usage)})
		h.step(t, false)
	}
	h.clk.Advance(300 * time.Millisecond)
	h.set(0, podSpec{base: "m", m: kv(1, 0, 0.35)}) // 240 tokens from what was published
	h.step(t, true)
}

func TestRateLimitAndHeartbeat(t *testing.T) {
	h := newHarness(t)
	h.clk.Advance(100 * time.Millisecond)
	h.set(0, podSpec{base: "m", m: kv(20, 0, 0.5)})
	h.step(t, false) // a large change, but within MinInterval of the last publish
	h.clk.Advance(150 * time.Millisecond)
	h.step(t, true) // 250 ms after the last publish: the change goes out
	h.clk.Advance(900 * time.Millisecond)
	h.step(t, false) // nothing moved, heartbeat not due
	h.clk.Advance(100 * time.Millisecond)
	h.step(t, true) // 1 s since the last publish: heartbeat
	h.clk.Advance(250 * time.Millisecond)
	h.step(t, false)
}

func TestPublishErrorsRetriedAndCounted(t *testing.T) {
	h := newHarness(t)
	h.sink.setFail(errRefused)
	h.clk.Advance(2 * time.Second)
	if ok, err := h.p.Step(); ok || err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Step with a failing sink = %v, %v; want an error", ok, err)
	}
	h.sink.setFail(nil)
	h.clk.Advance(100 * time.Millisecond)
	h.step(t, false) // retried no sooner than MinInterval
	h.clk.Advance(150 * time.Millisecond)
	h.step(t, true) // the heartbeat is still due
	want := `
# HELP switchyard_gateway_summaries_published_total Capacity summaries published to gossip, by reason (first, change, heartbeat).
# TYPE switchyard_gateway_summaries_published_total counter
switchyard_gateway_summaries_published_total{reason="change"} 0
switchyard_gateway_summaries_published_total{reason="first"} 1
switchyard_gateway_summaries_published_total{reason="heartbeat"} 1
# HELP switchyard_gateway_summary_publish_errors_total Capacity summaries that gossip refused to publish.
# TYPE switchyard_gateway_summary_publish_errors_total counter
switchyard_gateway_summary_publish_errors_total 1
`
	if err := testutil.GatherAndCompare(h.reg, strings.NewReader(want),
		"switchyard_gateway_summaries_published_total", "switchyard_gateway_summary_publish_errors_total"); err != nil {
		t.Fatal(err)
	}
	if size := gauge(t, h.reg, "switchyard_gateway_summary_size_bytes"); size < 10 {
		t.Fatalf("summary size gauge %v, want the published summary's size", size)
	}
}

// gauge returns the value of the unlabelled gauge name in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("gauge %s not registered", name)
	return 0
}

func TestRunStopsWithContext(t *testing.T) {
	sink := &recordingSink{}
	cfg := testConfig()
	cfg.CheckInterval = 5 * time.Millisecond
	p, err := publish.New(cfg, newView(t, time.Now(), podSpec{base: "m", m: kv(0, 0, 0)}).View(), sink, publish.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	poll.Within(10*time.Second, func() bool { // Run's check below fails if nothing was published
		p.Notify()
		return sink.count() != 0
	})
	cancel()
	select {
	case err := <-done:
		if err != nil || sink.count() == 0 {
			t.Fatalf("Run = %v after publishing %d summaries, want nil after at least one", err, sink.count())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(c *publish.Config)
		wantErr string
	}{
		{"defaults", func(*publish.Config) {}, ""},
		{"zero interval", func(c *publish.Config) { c.MinInterval = 0 }, "MinInterval"},
		{"heartbeat below interval", func(c *publish.Config) { c.Heartbeat = 100 * time.Millisecond }, "Heartbeat"},
		{"negative queue change", func(c *publish.Config) { c.QueueChange = -1 }, "QueueChange"},
		{"bad saturation", func(c *publish.Config) { c.Saturation.KV = 2 }, "kvCacheUtilThreshold"},
		{"bad prior", func(c *publish.Config) { c.PriorPrefillTokensPerSecond = 0 }, "PriorPrefill"},
		{"bad sketch rate", func(c *publish.Config) { c.SketchFalsePositiveRate = 1 }, "SketchFalsePositiveRate"},
		{"no sketch, rate unused", func(c *publish.Config) { c.MaxHotPrefixes, c.SketchFalsePositiveRate = 0, 0 }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := publish.DefaultConfig()
			tt.mutate(&c)
			err := c.Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
