package scheduling_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scheduling"
)

func TestBuiltinProfiles(t *testing.T) {
	want := map[string]bool{
		"default":              true,
		"gie-default":          true,
		"gie-lora":             true,
		"round-robin":          false,
		"least-request":        false,
		"random":               false,
		"weighted-round-robin": false,
		"p2c":                  false,
		"leastconn":            false,
		"pd":                   true,
	}
	if len(scheduling.Profiles()) != len(want) {
		t.Fatalf("profiles %v, want %d", scheduling.Profiles(), len(want))
	}
	for _, name := range scheduling.Profiles() {
		t.Run(name, func(t *testing.T) {
			s := newScheduler(t, name, plugintest.NewHandle())
			if s.FlowControl() != want[name] || s.Profile() != name {
				t.Fatalf("FlowControl() = %v, Profile() = %s", s.FlowControl(), s.Profile())
			}
			if _, err := scheduling.ProfileYAML(name); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(
		bad,
		[]byte(
			"apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n"+
				"- type: token-load-scorer\n",
		),
		0o600,
	); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     scheduling.Config
		wantErr string
	}{
		{"unknown profile", scheduling.Config{Profile: "fastest"}, `Profile "fastest"`},
		{"missing file", scheduling.Config{ConfigFile: filepath.Join(t.TempDir(), "none.yaml")}, "read scheduler config"},
		{"unsupported gie plugin", scheduling.Config{ConfigFile: bad}, `"token-load-scorer" is not supported`},
		{"file and text", scheduling.Config{ConfigFile: bad, ConfigText: "kind: EndpointPickerConfig"}, "exclusive"},
		{
			"bad config text",
			scheduling.Config{
				ConfigText: "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins: {}\n",
			},
			"config text: decode EndpointPickerConfig",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scheduling.New(tt.cfg, plugintest.NewHandle(), nil, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoadGIEConfigFile(t *testing.T) {
	var logs bytes.Buffer
	at := plugintest.Epoch
	h := plugintest.NewHandle(
		plugintest.Endpoint("10.0.0.1:8000", "m", 0, 0, 0.1, at),
		plugintest.Endpoint("10.0.0.2:8000", "m", 3, 0, 0.5, at),
		plugintest.Endpoint("10.0.0.3:8000", "m", 6, 0, 0.9, at),
	)
	cfg := scheduling.Config{ConfigFile: filepath.Join("testdata", "gie-config.yaml"), Now: h.Now}
	s, err := scheduling.New(cfg, h, slog.New(slog.NewTextHandler(&logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !s.FlowControl() {
		t.Fatal("a GIE config with a saturation detector must use flow control")
	}
	res, err := s.Schedule(context.Background(), &framework.Request{Model: "m", BaseModel: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Targets) != 2 || res.Targets[0].Meta().Address != "10.0.0.1:8000" ||
		res.Targets[1].Meta().Address != "10.0.0.2:8000" {
		t.Fatalf("targets %v, want the two least loaded, best first (maxNumOfEndpoints: 2)", res.Targets)
	}
	for _, want := range []string{"single-profile-handler", "openai-parser", "fcfs-ordering-policy", "flowControl section",
		"dataLayer section"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no warning about %s in:\n%s", want, logs.String())
		}
	}
}

// An inline EndpointPickerConfig (GIE's --config-text) replaces the profile as a file does.
func TestConfigText(t *testing.T) {
	at := plugintest.Epoch
	h := plugintest.NewHandle(
		plugintest.Endpoint("10.0.0.1:8000", "m", 6, 0, 0.1, at),
		plugintest.Endpoint("10.0.0.2:8000", "m", 0, 0, 0.1, at),
	)
	text := "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n" +
		"- type: queue-scorer\n- type: max-score-picker\nschedulingProfiles:\n- name: default\n  plugins:\n" +
		"  - pluginRef: queue-scorer\n  - pluginRef: max-score-picker\n"
	reg := prometheus.NewRegistry()
	s, err := scheduling.New(scheduling.Config{Profile: "round-robin", ConfigText: text, Now: h.Now}, h, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	if s.Profile() != "config-text" || !s.FlowControl() {
		t.Fatalf(
			"Profile() = %q, FlowControl() = %v: want the inline configuration, not round-robin",
			s.Profile(),
			s.FlowControl(),
		)
	}
	for range 5 {
		res, err := s.Schedule(context.Background(), &framework.Request{Model: "m", BaseModel: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Targets[0].Meta().Address; got != "10.0.0.2:8000" {
			t.Fatalf("target %s, want the empty queue (queue-scorer, max-score-picker)", got)
		}
	}
}

func TestEveryGIETypeIsKnown(t *testing.T) {
	// GIE v1.5.0's registered plugin types: each must build, be ignored with a warning, or be
	// rejected with a reason - never "unknown".
	gie := []string{
		"prefix-cache-scorer", "max-score-picker", "random-picker", "weighted-random-picker",
		"single-profile-handler", "kv-cache-utilization-scorer", "queue-scorer",
		"running-requests-size-scorer", "lora-affinity-scorer", "token-load-scorer",
		"global-strict-fairness-policy", "round-robin-fairness-policy", "fcfs-ordering-policy",
		"edf-ordering-policy", "slo-deadline-ordering-policy", "static-usage-limit-policy",
		"approx-prefix-cache-producer", "predicted-latency-scorer", "predicted-latency-producer",
		"latency-slo-admitter", "prefix-cache-affinity-filter", "slo-headroom-tier-filter",
		"latency-scorer", "inflight-load-producer", "metrics-data-source", "core-metrics-extractor",
		"k8s-notification-source", "endpoint-notification-source", "request-attribute-reporter",
		"openai-parser", "vllmgrpc-parser", "passthrough-parser", "concurrency-detector", "utilization-detector",
	}
	for _, typ := range gie {
		t.Run(typ, func(t *testing.T) {
			yaml := fmt.Sprintf(
				"apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: %s\n",
				typ,
			)
			c, err := framework.ParseConfig([]byte(yaml))
			if err != nil {
				t.Fatal(err)
			}
			_, err = framework.Build(c, framework.BuildOptions{Handle: plugintest.NewHandle()})
			if err != nil &&
				(strings.Contains(err.Error(), "unknown plugin type") || !strings.Contains(err.Error(), "not supported")) {
				t.Fatalf("%s: %v", typ, err)
			}
		})
	}
}

func TestScheduleOutcomes(t *testing.T) {
	at := plugintest.Epoch
	idle := func(addr string) *plugintest.FakeEndpoint { return plugintest.Endpoint(addr, "m", 0, 0, 0.1, at) }
	busy := func(addr string) *plugintest.FakeEndpoint { return plugintest.Endpoint(addr, "m", 9, 40, 0.95, at) }
	tests := []struct {
		name    string
		profile string
		eps     []*plugintest.FakeEndpoint
		req     framework.Request
		wantErr error
	}{
		{"ok", "default", []*plugintest.FakeEndpoint{idle("a"), busy("b")}, framework.Request{Model: "m"}, nil},
		{
			"unknown model",
			"default",
			[]*plugintest.FakeEndpoint{idle("a")},
			framework.Request{Model: "x"},
			scheduling.ErrUnknownModel,
		},
		{
			"unknown model on baseline",
			"round-robin",
			[]*plugintest.FakeEndpoint{idle("a")},
			framework.Request{Model: "x"},
			scheduling.ErrUnknownModel,
		},
		{"no endpoints at all", "default", nil, framework.Request{Model: "m"}, scheduling.ErrUnknownModel},
		{
			"subset hint excludes all",
			"default",
			[]*plugintest.FakeEndpoint{idle("a")},
			framework.Request{Model: "m", SubsetHint: []string{"z"}},
			scheduling.ErrNoEndpoints,
		},
		{
			"all saturated",
			"default",
			[]*plugintest.FakeEndpoint{busy("a"), busy("b")},
			framework.Request{Model: "m"},
			scheduling.ErrSaturated,
		},
		{
			"gie pool saturated",
			"gie-default",
			[]*plugintest.FakeEndpoint{busy("a"), busy("b")},
			framework.Request{Model: "m"},
			scheduling.ErrSaturated,
		},
		{
			"baseline ignores saturation",
			"round-robin",
			[]*plugintest.FakeEndpoint{busy("a"), busy("b")},
			framework.Request{Model: "m"},
			nil,
		},
		{
			"least-request ignores saturation",
			"least-request",
			[]*plugintest.FakeEndpoint{busy("a")},
			framework.Request{Model: "m"},
			nil,
		},
		{
			"weighted-round-robin ignores saturation",
			"weighted-round-robin",
			[]*plugintest.FakeEndpoint{busy("a")},
			framework.Request{Model: "m"},
			nil,
		},
		{
			"p2c ignores saturation",
			"p2c",
			[]*plugintest.FakeEndpoint{busy("a"), busy("b")},
			framework.Request{Model: "m"},
			nil,
		},
		{
			"leastconn ignores saturation",
			"leastconn",
			[]*plugintest.FakeEndpoint{busy("a")},
			framework.Request{Model: "m"},
			nil,
		},
		{
			"gie-lora pool saturated",
			"gie-lora",
			[]*plugintest.FakeEndpoint{busy("a"), busy("b")},
			framework.Request{Model: "m"},
			scheduling.ErrSaturated,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScheduler(t, tt.profile, plugintest.NewHandle(plugintest.Endpoints(tt.eps...)...))
			res, err := s.Schedule(context.Background(), &tt.req)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && tt.profile == "default" && res.Targets[0].Meta().Address != "a" {
				t.Fatalf("picked %s, want the idle pod", res.Targets[0].Meta().Address)
			}
		})
	}
}

func eject(e *plugintest.FakeEndpoint, now time.Time) {
	e.EjectUntil(now.Add(5 * time.Second))
}

func TestEjectedEndpoints(t *testing.T) {
	at := plugintest.Epoch
	tests := []struct {
		name    string
		profile string
		ejected int // of 3 endpoints
		wantErr error
		avoid   bool // the ejected endpoints must not be picked
	}{
		{"baseline skips ejected", "round-robin", 1, nil, true},
		{"baseline uses all when all ejected", "round-robin", 3, nil, false},
		{"default skips ejected", "default", 1, nil, true},
		{"default saturated when all ejected", "default", 3, scheduling.ErrSaturated, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var eps []*plugintest.FakeEndpoint
			for i := range 3 {
				e := plugintest.Endpoint(fmt.Sprintf("10.0.0.%d:80", i), "m", 0, 0, 0, at)
				if i < tt.ejected {
					eject(e, at)
				}
				eps = append(eps, e)
			}
			s := newScheduler(t, tt.profile, plugintest.NewHandle(plugintest.Endpoints(eps...)...))
			for range 6 {
				res, err := s.Schedule(context.Background(), &framework.Request{Model: "m"})
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if err == nil && tt.avoid && res.Targets[0] == eps[0] {
					t.Fatal("ejected endpoint picked")
				}
			}
		})
	}
}

func TestTargetsAreOrderedFallbacks(t *testing.T) {
	at := plugintest.Epoch
	var eps []*plugintest.FakeEndpoint
	for i, q := range []int{3, 0, 4, 1, 2} {
		eps = append(eps, plugintest.Endpoint(fmt.Sprintf("10.0.0.%d:80", i), "m", q, 0, 0.1, at))
	}
	s := newScheduler(t, "default", plugintest.NewHandle(plugintest.Endpoints(eps...)...))
	res, err := s.Schedule(context.Background(), &framework.Request{Model: "m", PromptTokens: 500})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range res.Targets {
		got = append(got, e.Meta().Address)
	}
	if strings.Join(got, " ") != "10.0.0.1:80 10.0.0.3:80 10.0.0.4:80" {
		t.Fatalf("targets %v, want queues 0, 1, 2 in that order", got)
	}
	if res.State == nil {
		t.Fatal("result carries no cycle state for PreRequest")
	}
	s.PreRequest(context.Background(), &framework.Request{Model: "m"}, res)
	if res.State != nil {
		t.Fatal("PreRequest did not release the cycle state")
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	h := plugintest.NewHandle(plugintest.Endpoint("10.0.0.1:80", "m", 0, 0, 0, plugintest.Epoch))
	cfg := scheduling.Config{Profile: "round-robin", Now: h.Now}
	s, err := scheduling.New(cfg, h, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"m", "m", "nope"} {
		_, _ = s.Schedule(context.Background(), &framework.Request{Model: model})
	}
	want := `
# HELP switchyard_gateway_scheduling_decisions_total Scheduling decisions by outcome: ok, unknown_model, ` +
		`no_endpoints, saturated, slo_unattainable.
# TYPE switchyard_gateway_scheduling_decisions_total counter
switchyard_gateway_scheduling_decisions_total{outcome="no_endpoints"} 0
switchyard_gateway_scheduling_decisions_total{outcome="ok"} 2
switchyard_gateway_scheduling_decisions_total{outcome="saturated"} 0
switchyard_gateway_scheduling_decisions_total{outcome="slo_unattainable"} 0
switchyard_gateway_scheduling_decisions_total{outcome="unknown_model"} 1
# HELP switchyard_gateway_scheduling_picks_total Requests scheduled to each endpoint (first choice).
# TYPE switchyard_gateway_scheduling_picks_total counter
switchyard_gateway_scheduling_picks_total{endpoint="10.0.0.1:80"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"switchyard_gateway_scheduling_decisions_total", "switchyard_gateway_scheduling_picks_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "switchyard_gateway_scheduling_duration_seconds"); n != 1 {
		t.Fatalf("latency histogram series = %d, want 1", n)
	}
	h.Remove("10.0.0.1:80")
	if n := testutil.CollectAndCount(reg, "switchyard_gateway_scheduling_picks_total"); n != 0 {
		t.Fatalf("picks series of a removed endpoint kept (%d)", n)
	}
}

func TestConcurrentSchedule(t *testing.T) {
	var eps []*plugintest.FakeEndpoint
	for i := range 16 {
		eps = append(eps, plugintest.Endpoint(fmt.Sprintf("10.0.0.%d:80", i), "m", i%3, i%5, 0.1, plugintest.Epoch))
	}
	for _, profile := range []string{"default", "gie-default"} {
		s := newScheduler(t, profile, plugintest.NewHandle(plugintest.Endpoints(eps...)...))
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 200 {
					req := benchRequest(g*1000 + i)
					res, err := s.Schedule(context.Background(), req)
					if err != nil {
						t.Error(err)
						return
					}
					s.PreRequest(context.Background(), req, res)
					s.FirstToken(
						context.Background(),
						req,
						&framework.ResponseInfo{Endpoint: res.Targets[0], Status: 200, TTFT: 50 * time.Millisecond, CachedTokens: -1},
					)
					s.PostResponse(context.Background(), req, &framework.ResponseInfo{
						Endpoint:     res.Targets[0],
						Status:       200,
						TTFT:         50 * time.Millisecond,
						MeanITL:      10 * time.Millisecond,
						OutputTokens: 10,
						PromptTokens: 1000,
						CachedTokens: 500,
					})
				}
			}()
		}
		wg.Wait()
	}
}

func TestPrefixAffinity(t *testing.T) {
	var eps []*plugintest.FakeEndpoint
	for i := range 4 {
		eps = append(eps, plugintest.Endpoint(fmt.Sprintf("10.0.0.%d:80", i), "m", 0, 2, 0.1, plugintest.Epoch))
	}
	for _, profile := range []string{"default", "gie-default"} {
		t.Run(profile, func(t *testing.T) {
			s := newScheduler(t, profile, plugintest.NewHandle(plugintest.Endpoints(eps...)...))
			picked := map[string]int{}
			for range 8 { // one after another, each finishing before the next
				req := benchRequest(1) // the same long prompt each time
				res, err := s.Schedule(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				s.PreRequest(context.Background(), req, res)
				picked[res.Targets[0].Meta().Address]++
			}
			if len(picked) != 1 {
				t.Fatalf("a repeated prompt went to %d pods (%v), want one (its prefix is cached there)", len(picked), picked)
			}
		})
	}
}

func TestPredictTTFT(t *testing.T) {
	e := plugintest.Endpoint("10.0.0.1:80", "m", 0, 0, 0, plugintest.Epoch)
	for _, tt := range []struct {
		profile string
		ok      bool
	}{{"default", true}, {"gie-default", false}, {"round-robin", false}} {
		s := newScheduler(t, tt.profile, plugintest.NewHandle(e))
		d, ok := s.PredictTTFT(e, 1000)
		if ok != tt.ok || ok && (d <= 0 || d > time.Second) {
			t.Errorf("%s: PredictTTFT = %v, %v", tt.profile, d, ok)
		}
	}
}

// weighted returns endpoints a, b, ... serving m, idle, with pod label switchyard.dev/weight.
func weighted(weights ...float64) []*plugintest.FakeEndpoint {
	eps := plugintest.WeightedEndpoints(weights...)
	for _, e := range eps {
		e.SetModels(&framework.Models{Base: "m", FetchedAt: plugintest.Epoch})
		e.SetMetrics(&framework.Metrics{ScrapedAt: plugintest.Epoch})
	}
	return eps
}

// TestWeightedBaselineProfiles runs the weighted baselines through the scheduler and the front
// door's hooks: the weights come from the pods' labels, and leastconn hears of finished
// responses (its PostResponse hook is wired).
func TestWeightedBaselineProfiles(t *testing.T) {
	ctx := context.Background()
	t.Run("weighted-round-robin", func(t *testing.T) {
		eps := weighted(3, 1)
		s := newScheduler(t, "weighted-round-robin", plugintest.NewHandle(plugintest.Endpoints(eps...)...))
		var got strings.Builder
		for range 8 {
			res, err := s.Schedule(ctx, &framework.Request{Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			s.PreRequest(ctx, &framework.Request{Model: "m"}, res)
			got.WriteString(res.Targets[0].Meta().Address)
		}
		if got.String() != "aabaaaba" {
			t.Fatalf("picks %q, want aabaaaba (3:1)", got.String())
		}
	})
	t.Run("p2c weighted", func(t *testing.T) {
		eps := weighted(4, 1)
		s := newScheduler(t, "p2c", plugintest.NewHandle(plugintest.Endpoints(eps...)...))
		picks := dispatch(t, s, 10)
		if picks["a"] <= picks["b"] {
			t.Fatalf("picks %v: the pod of weight 4 must take more", picks)
		}
	})
	t.Run("leastconn hears responses", func(t *testing.T) {
		eps := weighted(1, 1)
		s := newScheduler(t, "leastconn", plugintest.NewHandle(plugintest.Endpoints(eps...)...))
		first := func() string {
			res, err := s.Schedule(ctx, &framework.Request{Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			s.PreRequest(ctx, &framework.Request{Model: "m"}, res)
			return res.Targets[0].Meta().Address
		}
		if got := first() + first(); got != "ab" {
			t.Fatalf("picks %q, want ab", got)
		}
		s.PostResponse(ctx, &framework.Request{Model: "m"}, &framework.ResponseInfo{Endpoint: eps[0], Status: 200})
		if got := first(); got != "b" {
			t.Fatalf("after a's response ended: %q, want b (a's load changed last)", got)
		}
	})
}
