package saturation_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/saturation"
)

var now = plugintest.Epoch.Add(10 * time.Second)

// state builds an endpoint in a named condition.
func state(name string) *plugintest.FakeEndpoint {
	fresh := now.Add(-100 * time.Millisecond)
	switch name {
	case "idle":
		return plugintest.Endpoint(name, "m", 0, 1, 0.1, fresh)
	case "queue4":
		return plugintest.Endpoint(name, "m", 4, 1, 0.1, fresh)
	case "queue5":
		return plugintest.Endpoint(name, "m", 5, 1, 0.1, fresh)
	case "kv80":
		return plugintest.Endpoint(name, "m", 0, 1, 0.8, fresh)
	case "queue2+sent3": // scraped 2 waiting, then this gateway sent 3 more
		e := plugintest.Endpoint(name, "m", 2, 1, 0.1, fresh)
		e.AddInFlight(3)
		return e
	case "queue0+sent6": // scraped with room in its batch, then this gateway sent 6
		e := plugintest.Endpoint(name, "m", 0, 1, 0.1, fresh)
		e.AddInFlight(6)
		return e
	case "queue4+sent2-done2": // scraped 4 waiting; 2 sent since and 2 finished
		e := plugintest.Endpoint(name, "m", 4, 1, 0.1, fresh)
		e.AddInFlight(2)
		e.AddInFlight(-2)
		return e
	case "stale":
		return plugintest.Endpoint(name, "m", 0, 1, 0.1, now.Add(-3*time.Second))
	case "scrape-failing":
		e := plugintest.Endpoint(name, "m", 0, 1, 0.1, fresh)
		e.RecordScrapeFailure()
		return e
	case "no-metrics":
		return plugintest.NewEndpoint(name)
	case "ejected":
		e := plugintest.Endpoint(name, "m", 0, 1, 0.1, fresh)
		e.EjectUntil(now.Add(5 * time.Second))
		return e
	}
	panic(name)
}

func run(f framework.Filter, names ...string) string {
	eps := make([]framework.Endpoint, len(names))
	for i, n := range names {
		eps[i] = state(n)
	}
	got := f.Filter(context.Background(), &framework.CycleState{Now: now}, &framework.Request{}, eps)
	var out []string
	for _, e := range got {
		out = append(out, e.Meta().Address)
	}
	return strings.Join(out, " ")
}

func newPlugin(t *testing.T, f framework.Factory, params string) framework.Plugin {
	t.Helper()
	var raw json.RawMessage
	if params != "" {
		raw = json.RawMessage(params)
	}
	p, err := f("x", raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSaturationFilter(t *testing.T) {
	all := []string{"idle", "queue4", "queue5", "kv80", "stale", "scrape-failing", "no-metrics", "ejected"}
	tests := []struct {
		name, params string
		in           []string
		want         string
	}{
		{"defaults", "", all, "idle queue4"},
		{"higher thresholds", `{"queueDepthThreshold": 6, "kvCacheUtilThreshold": 0.9}`, all, "idle queue4 queue5 kv80"},
		{"headroom", `{"headroom": 0.25}`, all, "idle queue4 queue5 kv80"},
		{"longer staleness", `{"metricsStalenessThreshold": "5s"}`, all, "idle queue4 stale"},
		{"all saturated gives none", "", []string{"queue5", "ejected"}, ""},
		{"endpoint scope", `{"queueDepthScope": "endpoint"}`, all, "idle queue4"},
		// With the pool scope a long queue alone leaves a pod to the scorers while another pod is
		// unsaturated; KV, staleness and ejection still drop it.
		{"pool scope", `{"queueDepthScope": "pool"}`, all, "idle queue4 queue5"},
		{"pool scope, queues only", `{"queueDepthScope": "pool"}`, []string{"queue5", "queue4"}, "queue5 queue4"},
		{
			"pool scope, nothing unsaturated",
			`{"queueDepthScope": "pool"}`,
			[]string{"queue5", "kv80", "stale", "ejected"},
			"",
		},
		{
			"pool scope, threshold applies",
			`{"queueDepthScope": "pool", "queueDepthThreshold": 4}`,
			[]string{"queue5", "queue4"},
			"",
		},
		// Counting what was sent since the scrape: 2 scraped + 3 sent reaches 5; sends that
		// finished are not counted, nor sends to a pod whose scrape showed no queue (it had room
		// to start them).
		{"sent not counted", "", []string{"queue2+sent3", "queue4+sent2-done2"}, "queue2+sent3 queue4+sent2-done2"},
		{
			"sent counted",
			`{"countSentSinceScrape": true}`,
			[]string{"queue2+sent3", "queue4+sent2-done2", "queue0+sent6", "idle"},
			"queue4+sent2-done2 queue0+sent6 idle",
		},
		{
			"sent counted, pool scope, all full",
			`{"countSentSinceScrape": true, "queueDepthScope": "pool"}`,
			[]string{"queue2+sent3", "queue5"},
			"",
		},
		{
			"sent counted, pool scope, one with room",
			`{"countSentSinceScrape": true, "queueDepthScope": "pool"}`,
			[]string{"queue2+sent3", "queue4+sent2-done2"},
			"queue2+sent3 queue4+sent2-done2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPlugin(t, saturation.FilterFactory, tt.params).(framework.Filter)
			if _, ok := f.(framework.SaturationFilter); !ok {
				t.Fatal("saturation-filter is not marked as a SaturationFilter")
			}
			if got := run(f, tt.in...); got != tt.want {
				t.Fatalf("kept %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUtilizationDetector(t *testing.T) {
	d := newPlugin(t, saturation.UtilizationFactory, `{"queueDepthThreshold": 4}`)
	f := d.(framework.Filter)
	if got := run(f, "idle", "queue4", "kv80"); got != "idle" {
		t.Fatalf("kept %q, want idle", got)
	}
	if got := run(f, "queue4", "kv80"); got != "queue4 kv80" {
		t.Fatalf("all saturated: kept %q, want all (GIE semantics)", got)
	}
	tests := []struct {
		names []string
		want  float64
	}{
		{[]string{"idle"}, 0.125},           // max(0/4, 0.1/0.8)
		{[]string{"queue4", "kv80"}, 1},     // 1 and 1
		{[]string{"stale", "idle"}, 0.5625}, // 1 and 0.125
		{nil, 1},
	}
	for _, tt := range tests {
		eps := make([]framework.Endpoint, len(tt.names))
		for i, n := range tt.names {
			eps[i] = state(n)
		}
		got := d.(framework.SaturationDetector).Saturation(context.Background(), &framework.CycleState{Now: now}, eps)
		if diff := got - tt.want; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("%v: saturation %v, want %v", tt.names, got, tt.want)
		}
	}
}

func TestConcurrencyDetector(t *testing.T) {
	d := newPlugin(t, saturation.ConcurrencyFactory, `{"maxConcurrency": 2}`)
	a, b := state("idle"), state("idle")
	a.AddInFlight(2)
	eps := []framework.Endpoint{a, b}
	cs := &framework.CycleState{Now: now}
	if got := d.(framework.Filter).Filter(
		context.Background(),
		cs,
		&framework.Request{},
		eps,
	); len(got) != 1 ||
		got[0] != b {
		t.Fatalf("kept %v, want only the endpoint under the limit", got)
	}
	if got := d.(framework.SaturationDetector).Saturation(
		context.Background(),
		cs,
		[]framework.Endpoint{a, b},
	); got != 0.5 {
		t.Fatalf("saturation = %v, want 0.5", got)
	}
}

func TestFactoryErrors(t *testing.T) {
	tests := []struct {
		name    string
		f       framework.Factory
		params  string
		wantErr string
	}{
		{"zero queue", saturation.FilterFactory, `{"queueDepthThreshold": 0}`, "queueDepthThreshold"},
		{"kv over 1", saturation.UtilizationFactory, `{"kvCacheUtilThreshold": 1.5}`, "kvCacheUtilThreshold"},
		{"bad duration", saturation.FilterFactory, `{"metricsStalenessThreshold": "soon"}`, "duration"},
		{"negative headroom", saturation.UtilizationFactory, `{"headroom": -1}`, "headroom"},
		{"unknown field", saturation.FilterFactory, `{"queueThreshold": 3}`, "unknown field"},
		{"unknown scope", saturation.FilterFactory, `{"queueDepthScope": "cluster"}`, "queueDepthScope"},
		{"scope on the detector", saturation.UtilizationFactory, `{"queueDepthScope": "pool"}`, "unknown field"},
		{"token mode", saturation.ConcurrencyFactory, `{"concurrencyMode": "tokens"}`, "tokens"},
		{"zero concurrency", saturation.ConcurrencyFactory, `{"maxConcurrency": 0}`, "maxConcurrency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.f("x", json.RawMessage(tt.params), nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

// saturation-filter and utilization-detector decide with framework.Saturation and nothing else:
// each endpoint alone is kept exactly when the definition says it is not saturated, and the
// detector's pool figure is the definition's mean load.
func TestPluginsUseTheOneDefinition(t *testing.T) {
	def := framework.DefaultSaturation()
	filter := newPlugin(t, saturation.FilterFactory, "").(framework.Filter)
	detector := newPlugin(t, saturation.UtilizationFactory, "")
	cs := &framework.CycleState{Now: now}
	names := []string{
		"idle",
		"queue4",
		"queue5",
		"kv80",
		"stale",
		"scrape-failing",
		"no-metrics",
		"ejected",
		"queue2+sent3",
	}
	var all []framework.Endpoint
	for _, name := range names {
		e := state(name)
		all = append(all, e)
		want := !def.Saturated(e, now)
		for pl, f := range map[string]framework.Filter{"saturation-filter": filter, "utilization-detector": detector.(framework.Filter)} {
			if kept := len(
				f.Filter(context.Background(), cs, &framework.Request{}, []framework.Endpoint{e}),
			) == 1; kept != want &&
				(want || pl == "saturation-filter") {
				// utilization-detector keeps a lone saturated endpoint (it never empties the set).
				t.Errorf("%s on %s: kept %v, the definition says unsaturated %v", pl, name, kept, want)
			}
		}
	}
	got := detector.(framework.SaturationDetector).Saturation(context.Background(), cs, all)
	if want := framework.MeanLoad(&def, all, now); got != want {
		t.Errorf("pool figure %v, want MeanLoad %v", got, want)
	}
}
