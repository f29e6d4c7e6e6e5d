package scheduling_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scheduling"
)

// roleEndpoint is an idle endpoint serving "m" with the llm-d.ai/role label role ("" for none).
func roleEndpoint(h *plugintest.Handle, addr, role string, queue, running int, kv float64) *plugintest.FakeEndpoint {
	var labels map[string]string
	if role != "" {
		labels = map[string]string{framework.RoleLabel: role}
	}
	e := plugintest.NewLabeledEndpoint(addr, labels)
	e.SetModels(&framework.Models{Base: "m", FetchedAt: h.Now()})
	plugintest.SetLoad(e, queue, running, kv, h.Now())
	return e
}

func pdRequest(prompt string) *framework.Request {
	return &framework.Request{ID: "r", Model: "m", BaseModel: "m", PromptTokens: len(prompt) / 4}
}

func TestPDProfilePicksPrefillAndDecode(t *testing.T) {
	h := plugintest.NewHandle()
	p1 := roleEndpoint(h, "10.0.0.1:8000", "prefill", 3, 0, 0.1)
	p2 := roleEndpoint(h, "10.0.0.2:8000", "prefill", 0, 0, 0.1)
	d1 := roleEndpoint(h, "10.0.0.3:8000", "decode", 0, 20, 0.7)
	d2 := roleEndpoint(h, "10.0.0.4:8000", "decode", 0, 2, 0.1)
	h.Set(plugintest.Endpoints(p1, p2, d1, d2)...)
	reg := prometheus.NewRegistry()
	cfg := scheduling.DefaultConfig()
	cfg.Profile, cfg.Now = scheduling.ProfilePD, h.Now
	s, err := scheduling.New(cfg, h, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Schedule(context.Background(), pdRequest(strings.Repeat("x", 16384)))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Targets {
		if framework.RoleOf(e.Meta()) == framework.RolePrefill {
			t.Fatalf("a prefill pod among the decode targets: %s", e.Meta().Address)
		}
	}
	if got := res.Targets[0].Meta().Address; got != d2.Meta().Address {
		t.Errorf("decode pod %s, want the one with KV room and a small batch, %s", got, d2.Meta().Address)
	}
	if res.Disaggregation != framework.PDSplit || res.Prefill == nil {
		t.Fatalf("decision %q, prefill %v; want a prefill pod", res.Disaggregation, res.Prefill)
	}
	if got := res.Prefill.Targets[0].Meta().Address; got != p2.Meta().Address {
		t.Errorf("prefill pod %s, want the one with the shorter queue, %s", got, p2.Meta().Address)
	}
	s.PreRequest(context.Background(), pdRequest(""), res)
	if res.State != nil || res.Prefill.State != nil {
		t.Fatal("PreRequest left cycle state behind")
	}
	want := `
# HELP switchyard_gateway_pd_decisions_total Prefill/decode decisions of a pd profile: prefill-decode (a prefill ` +
		`endpoint computes the prompt), below-threshold, no-prefill-endpoint and local-prefill (the decode endpoint ` +
		`prefills itself).
# TYPE switchyard_gateway_pd_decisions_total counter
switchyard_gateway_pd_decisions_total{decision="below-threshold"} 0
switchyard_gateway_pd_decisions_total{decision="local-prefill"} 0
switchyard_gateway_pd_decisions_total{decision="no-prefill-endpoint"} 0
switchyard_gateway_pd_decisions_total{decision="prefill-decode"} 1
`
	if err := testutil.GatherAndCompare(
		reg,
		strings.NewReader(want),
		"switchyard_gateway_pd_decisions_total",
	); err != nil {
		t.Fatal(err)
	}
}

func TestPDThreshold(t *testing.T) {
	tests := []struct {
		name      string
		threshold int
		prompt    int // bytes: 4 per token
		cached    bool
		want      string
	}{
		{"long prompt", 256, 4096, false, framework.PDSplit},
		{"short prompt", 256, 1000, false, framework.PDBelowThreshold},
		{"at the threshold", 256, 1024, false, framework.PDSplit},
		{"long prompt cached on the decode pod", 256, 4096, true, framework.PDBelowThreshold},
		{"threshold 0", 0, 8, false, framework.PDSplit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := plugintest.NewHandle()
			p := roleEndpoint(h, "10.0.0.1:8000", "prefill", 0, 0, 0)
			d := roleEndpoint(h, "10.0.0.2:8000", "decode", 0, 0, 0)
			h.Set(plugintest.Endpoints(p, d)...)
			s := newConfigScheduler(t, h, pdConfig(tt.threshold))
			prompt := strings.Repeat("y", tt.prompt)
			if tt.cached { // route the same prompt once with no prefill pod: the decode pod now holds it
				h.Set(plugintest.Endpoints(d)...)
				first, err := s.Schedule(context.Background(), prefixRequest(prompt))
				if err != nil {
					t.Fatal(err)
				}
				s.PreRequest(context.Background(), prefixRequest(prompt), first)
				h.Set(plugintest.Endpoints(p, d)...)
			}
			res, err := s.Schedule(context.Background(), prefixRequest(prompt))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Discard(res)
			if res.Disaggregation != tt.want || (res.Prefill != nil) != (tt.want == framework.PDSplit) {
				t.Fatalf("decision %q (prefill %v), want %q", res.Disaggregation, res.Prefill, tt.want)
			}
			if res.Targets[0] != framework.Endpoint(d) {
				t.Fatalf("destination %s, want the decode pod", res.Targets[0].Meta().Address)
			}
		})
	}
}

func TestPDWithoutPrefillPods(t *testing.T) {
	h := plugintest.NewHandle()
	decode := roleEndpoint(h, "10.0.0.1:8000", "decode", 0, 0, 0)
	bare := roleEndpoint(h, "10.0.0.2:8000", "", 0, 0, 0)
	h.Set(plugintest.Endpoints(decode, bare)...)
	s := newScheduler(t, scheduling.ProfilePD, h)
	res, err := s.Schedule(context.Background(), pdRequest(strings.Repeat("z", 8192)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Discard(res)
	if res.Disaggregation != framework.PDNoPrefill || res.Prefill != nil || len(res.Targets) != 2 {
		t.Fatalf("decision %q, prefill %v, %d targets; want decode-only over both pods",
			res.Disaggregation, res.Prefill, len(res.Targets))
	}
}

// TestPDBothPodPrefills: a pod labelled both takes part in either role: the decode profile may
// pick it, and the prefill profile may pick it to prefill for a decode pod.
func TestPDBothPodPrefills(t *testing.T) {
	h := plugintest.NewHandle()
	both := roleEndpoint(h, "10.0.0.1:8000", "both", 0, 30, 0.7)
	decode := roleEndpoint(h, "10.0.0.2:8000", "decode", 0, 0, 0.1)
	h.Set(plugintest.Endpoints(both, decode)...)
	s := newConfigScheduler(t, h, pdConfig(0))
	seen := map[string]int{}
	for range 16 {
		res, err := s.Schedule(context.Background(), pdRequest(strings.Repeat("z", 8192)))
		if err != nil {
			t.Fatal(err)
		}
		switch res.Targets[0] {
		case framework.Endpoint(decode):
			if res.Disaggregation != framework.PDSplit || res.Prefill.Targets[0] != framework.Endpoint(both) {
				t.Fatalf("on the decode pod: decision %q, want the both pod to prefill", res.Disaggregation)
			}
		case framework.Endpoint(both):
			if res.Disaggregation != framework.PDNoPrefill {
				t.Fatalf("on the both pod: decision %q, want %q (a decode pod never prefills for others)",
					res.Disaggregation, framework.PDNoPrefill)
			}
		}
		seen[res.Disaggregation]++
		s.Discard(res)
	}
	if seen[framework.PDSplit] == 0 {
		t.Fatalf("decisions %v: the both pod never prefilled", seen)
	}
}

// TestRolelessFleetUnaffected: the default profile ignores roles, and decides no disaggregation.
func TestRolelessFleetUnaffected(t *testing.T) {
	h := plugintest.NewHandle()
	a := roleEndpoint(h, "10.0.0.1:8000", "prefill", 0, 0, 0)
	b := roleEndpoint(h, "10.0.0.2:8000", "", 0, 0, 0)
	h.Set(plugintest.Endpoints(a, b)...)
	s := newScheduler(t, scheduling.ProfileDefault, h)
	for range 4 {
		res, err := s.Schedule(context.Background(), pdRequest(strings.Repeat("w", 8192)))
		if err != nil {
			t.Fatal(err)
		}
		if res.Disaggregation != "" || res.Prefill != nil || len(res.Targets) != 2 {
			t.Fatalf("default profile: decision %q, prefill %v, %d targets", res.Disaggregation, res.Prefill,
				len(res.Targets))
		}
		s.Discard(res)
	}
}

func prefixRequest(prompt string) *framework.Request {
	r := pdRequest(prompt)
	r.PrefixHashes = make([]uint64, len(prompt)/64)
	for i := range r.PrefixHashes {
		r.PrefixHashes[i] = uint64(i + 1) // a chain unique to the test's prompt length
	}
	return r
}

func pdConfig(threshold int) string {
	return fmt.Sprintf(`apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: pd-profile-handler
  parameters: {threshold: %d}
- type: prefill-filter
- type: decode-filter
- type: prefix-cache-scorer
- type: prefill-header-handler
schedulingProfiles:
- name: prefill
  plugins:
  - pluginRef: prefill-filter
  - pluginRef: prefix-cache-scorer
- name: decode
  plugins:
  - pluginRef: decode-filter
  - pluginRef: prefix-cache-scorer
`, threshold)
}

func newConfigScheduler(t *testing.T, h *plugintest.Handle, text string) *scheduling.Scheduler {
	t.Helper()
	cfg := scheduling.DefaultConfig()
	cfg.ConfigText, cfg.Now = text, h.Now
	s, err := scheduling.New(cfg, h, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
