package framework_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// fake plugins, one per role.
type (
	named    struct{ tn framework.TypedName }
	filter   struct{ named }
	satFilt  struct{ filter }
	scorer   struct{ named }
	picker   struct{ named }
	detector struct{ named }
	hooked   struct{ scorer }
	bare     struct{ named }
	pdh      struct{ named }
)

func (pdh) Profiles() (decode, prefill string) { return "dec", "pre" }
func (pdh) NeedsPrefill(context.Context, *framework.CycleState, *framework.Request, framework.Endpoint) bool {
	return true
}

func (n named) TypedName() framework.TypedName { return n.tn }

func (filter) Filter(
	_ context.Context,
	_ *framework.CycleState,
	_ *framework.Request,
	eps []framework.Endpoint,
) []framework.Endpoint {
	return eps
}
func (satFilt) RemovesSaturated() {}
func (scorer) Score(context.Context, *framework.CycleState, *framework.Request, []framework.Endpoint, []float64) {
}

func (picker) Pick(
	context.Context,
	*framework.CycleState,
	*framework.Request,
	[]framework.ScoredEndpoint,
) *framework.Result {
	return nil
}
func (detector) Saturation(context.Context, *framework.CycleState, []framework.Endpoint) float64 {
	return 0
}
func (hooked) PreRequest(context.Context, *framework.Request, *framework.Result)         {}
func (hooked) PostResponse(context.Context, *framework.Request, *framework.ResponseInfo) {}

func testRegistry() *framework.Registry {
	r := framework.NewRegistry()
	add := func(typ string, mk func(framework.TypedName) framework.Plugin) {
		r.Register(typ, func(name string, _ json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
			return mk(framework.TypedName{Type: typ, Name: name}), nil
		})
	}
	add("f", func(tn framework.TypedName) framework.Plugin { return filter{named{tn}} })
	add("sat", func(tn framework.TypedName) framework.Plugin { return satFilt{filter{named{tn}}} })
	add("s", func(tn framework.TypedName) framework.Plugin { return scorer{named{tn}} })
	add("hooked", func(tn framework.TypedName) framework.Plugin { return hooked{scorer{named{tn}}} })
	add("max-score-picker", func(tn framework.TypedName) framework.Plugin { return picker{named{tn}} })
	add("p", func(tn framework.TypedName) framework.Plugin { return picker{named{tn}} })
	add("d", func(tn framework.TypedName) framework.Plugin { return detector{named{tn}} })
	add("bare", func(tn framework.TypedName) framework.Plugin { return bare{named{tn}} })
	add("pdh", func(tn framework.TypedName) framework.Plugin { return pdh{named{tn}} })
	r.Register("broken", func(string, json.RawMessage, framework.Handle) (framework.Plugin, error) {
		return nil, errors.New("bad parameter x")
	})
	r.RegisterIgnored("single-profile-handler", "one profile")
	r.RegisterUnsupported("latency-scorer", "use predicted-ttft-scorer")
	return r
}

func build(t *testing.T, yaml string, detector string) (*framework.Profile, string, error) {
	t.Helper()
	c, err := framework.ParseConfig([]byte(header + yaml))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	p, err := framework.Build(c, framework.BuildOptions{
		Registry: testRegistry(), Logger: slog.New(slog.NewTextHandler(&logs, nil)), DefaultDetector: detector,
	})
	return p, logs.String(), err
}

func TestBuildProfile(t *testing.T) {
	p, logs, err := build(t, `plugins:
- type: single-profile-handler
- type: f
- type: s
- name: s2
  type: hooked
- type: p
- type: bare
schedulingProfiles:
- name: main
  plugins:
  - pluginRef: single-profile-handler
  - pluginRef: f
  - pluginRef: s
  - pluginRef: s2
    weight: 2.5
  - pluginRef: p
`, "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "main" || len(p.Filters) != 1 || len(p.Scorers) != 2 || p.Picker.TypedName().Name != "p" {
		t.Fatalf("profile = %+v", p)
	}
	if p.Scorers[0].Weight != 1 || p.Scorers[1].Weight != 2.5 {
		t.Fatalf("weights = %v, %v; want default 1 and 2.5", p.Scorers[0].Weight, p.Scorers[1].Weight)
	}
	if len(p.PreRequests) != 1 || len(p.PostResponses) != 1 || p.Detector != nil {
		t.Fatalf("hooks/detector = %d %d %v", len(p.PreRequests), len(p.PostResponses), p.Detector)
	}
	for _, want := range []string{"ignoring gie plugin type", "single-profile-handler", "not used by the profile",
		"plugin=bare"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
}

func TestBuildDefaults(t *testing.T) {
	tests := []struct {
		name, yaml, detector string
		wantPicker           string
		wantDetector         string
		wantScorers          int
	}{
		{
			"picker added",
			"plugins:\n- type: s\nschedulingProfiles:\n- name: a\n  plugins:\n  - pluginRef: s\n",
			"",
			"max-score-picker",
			"",
			1,
		},
		{"profile made from all plugins", "plugins:\n- type: s\n- type: hooked\n- type: p\n", "", "p", "", 2},
		{"implicit detector", "plugins:\n- type: s\n", "d", "max-score-picker", "d", 1},
		{
			"no implicit detector with a saturation filter",
			"plugins:\n- type: sat\n- type: s\n",
			"d",
			"max-score-picker",
			"",
			1,
		},
		{"detector plugin found", "plugins:\n- name: mine\n  type: d\n- type: s\n", "", "max-score-picker", "mine", 1},
		{
			"detector referenced",
			"plugins:\n- name: x\n  type: d\n- type: s\nsaturationDetector:\n  pluginRef: x\n",
			"d",
			"max-score-picker",
			"x",
			1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _, err := build(t, tt.yaml, tt.detector)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Picker.TypedName().Name; got != tt.wantPicker {
				t.Errorf("picker = %s, want %s", got, tt.wantPicker)
			}
			got := ""
			if p.Detector != nil {
				got = p.Detector.TypedName().Name
			}
			if got != tt.wantDetector || len(p.Scorers) != tt.wantScorers {
				t.Errorf("detector %q scorers %d; want %q %d", got, len(p.Scorers), tt.wantDetector, tt.wantScorers)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct{ name, yaml, wantErr string }{
		{"unknown type", "plugins:\n- type: warp-scorer\n", `unknown plugin type "warp-scorer"`},
		{"unsupported gie type", "plugins:\n- type: latency-scorer\n", "use predicted-ttft-scorer"},
		{"factory error", "plugins:\n- name: b\n  type: broken\n", `"b" (type broken): bad parameter x`},
		{
			"two pickers",
			"plugins:\n- type: p\n- type: max-score-picker\nschedulingProfiles:\n- name: a\n  plugins:\n  - pluginRef: p\n" +
				"  - pluginRef: max-score-picker\n",
			"two pickers",
		},
		{
			"not a profile plugin",
			"plugins:\n- type: bare\nschedulingProfiles:\n- name: a\n  plugins:\n  - pluginRef: bare\n",
			"not a filter, scorer or picker",
		},
		{
			"referenced twice",
			"plugins:\n- type: s\nschedulingProfiles:\n- name: a\n  plugins:\n  - pluginRef: s\n  - pluginRef: s\n",
			"referenced twice",
		},
		{
			"detector not a detector",
			"plugins:\n- type: s\nsaturationDetector:\n  pluginRef: s\n",
			"not a saturation detector",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := build(t, tt.yaml, "")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestBuildPrefillDecodeProfiles(t *testing.T) {
	p, logs, err := build(t, `plugins:
- type: pdh
- type: f
- name: f2
  type: f
- type: hooked
- type: d
schedulingProfiles:
- name: pre
  plugins:
  - pluginRef: f2
  - pluginRef: hooked
- name: dec
  plugins:
  - pluginRef: f
  - pluginRef: hooked
    weight: 3
`, "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "dec" || p.PD == nil || p.Prefill == nil || p.Prefill.Name != "pre" {
		t.Fatalf("profile %q, handler %v, prefill %+v; want dec with pre attached", p.Name, p.PD, p.Prefill)
	}
	if p.Filters[0].TypedName().Name != "f" || p.Prefill.Filters[0].TypedName().Name != "f2" {
		t.Fatalf("filters: decode %v, prefill %v", p.Filters, p.Prefill.Filters)
	}
	if p.Scorers[0].Weight != 3 || p.Prefill.Scorers[0].Weight != 1 {
		t.Fatalf("the shared scorer's weights: decode %v, prefill %v", p.Scorers[0].Weight, p.Prefill.Scorers[0].Weight)
	}
	if p.Detector == nil || p.Prefill.Detector != nil {
		t.Fatalf("detector: decode %v, prefill %v; want only the decode profile's", p.Detector, p.Prefill.Detector)
	}
	if len(p.PreRequests) != 1 || len(p.Prefill.PreRequests) != 1 {
		t.Fatalf("pre-request hooks: decode %d, prefill %d", len(p.PreRequests), len(p.Prefill.PreRequests))
	}
	if strings.Contains(logs, "not used") {
		t.Fatalf("every plugin is used, logs say:\n%s", logs)
	}
}

func TestBuildProfileCountErrors(t *testing.T) {
	two := "schedulingProfiles:\n- name: dec\n  plugins:\n  - pluginRef: s\n- name: other\n  plugins: []\n"
	tests := []struct{ name, yaml, wantErr string }{
		{"two profiles without a handler", "plugins:\n- type: s\n" + two, "no profile handler"},
		{"handler with one profile", "plugins:\n- type: pdh\n- type: s\n" +
			"schedulingProfiles:\n- name: dec\n  plugins:\n  - pluginRef: s\n", "needs exactly two profiles"},
		{"handler's profile missing", "plugins:\n- type: pdh\n- type: s\n" + two, `a profile named "pre"`},
		{"two handlers", "plugins:\n- type: pdh\n- name: h2\n  type: pdh\n- type: s\n", "two profile handlers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := build(t, tt.yaml, "")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}
