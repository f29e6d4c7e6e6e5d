package scheduling_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scheduling"
)

// The shipped default profile runs the slo-filter: with the neutral prior (10,000 tokens/s, 20 ms
// per token) a 1,000-token prompt is predicted 125 ms to its first token on an idle pod, so a
// 50 ms objective is unattainable: the sheddable request is refused, a critical one is served on
// the nearest pod, and a request with a 1 s objective or none is served as before.
func TestSLOFilterInDefaultProfile(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	h := plugintest.NewHandle(
		plugintest.Endpoint("10.0.0.1:80", "m", 0, 0, 0.1, plugintest.Epoch),
		plugintest.Endpoint("10.0.0.2:80", "m", 3, 2, 0.1, plugintest.Epoch))
	s, err := scheduling.New(scheduling.Config{Profile: scheduling.ProfileDefault, Now: h.Now}, h, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	tight := framework.SLO{TTFT: 50 * time.Millisecond}
	tests := []struct {
		name     string
		slo      framework.SLO
		priority int
		want     string // the chosen endpoint, "" when refused
	}{
		{"sheddable, unattainable: refused", tight, -1, ""},
		{"critical, unattainable: the nearest pod", tight, 5, "10.0.0.1:80"},
		{
			"default priority, unattainable: the nearest pod",
			framework.SLO{TTFT: 50 * time.Millisecond, TPOT: time.Millisecond},
			0,
			"10.0.0.1:80",
		},
		{"sheddable, attainable: served", framework.SLO{TTFT: time.Second, TPOT: 50 * time.Millisecond}, -1, "10.0.0.1:80"},
		{"no objectives: served", framework.SLO{}, -1, "10.0.0.1:80"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &framework.Request{
				ID:           "r",
				Model:        "m",
				BaseModel:    "m",
				PromptTokens: 1000,
				Priority:     tt.priority,
				SLO:          tt.slo,
				Arrived:      h.Now(),
			}
			res, err := s.Schedule(context.Background(), req)
			if tt.want == "" {
				if !errors.Is(err, scheduling.ErrSLOUnattainable) || res != nil {
					t.Fatalf("Schedule = %v, %v; want ErrSLOUnattainable", res, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Discard(res)
			if got := res.Targets[0].Meta().Address; got != tt.want {
				t.Fatalf("chose %s, want %s", got, tt.want)
			}
		})
	}
	if got := decisions(t, reg, "slo_unattainable"); got != 1 {
		t.Fatalf("slo_unattainable decisions %v, want 1", got)
	}
}

// decisions reads switchyard_gateway_scheduling_decisions_total{outcome}.
func decisions(t *testing.T, reg *prometheus.Registry, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == "switchyard_gateway_scheduling_decisions_total" && m.GetLabel()[0].GetValue() == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no switchyard_gateway_scheduling_decisions_total{outcome=%q}", outcome)
	return 0
}

func TestSLOFilterNeedsLatencyModel(t *testing.T) {
	h := plugintest.NewHandle(plugintest.Endpoint("10.0.0.1:80", "m", 0, 0, 0, plugintest.Epoch))
	text := "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: slo-filter\n- type: queue-scorer\n"
	_, err := scheduling.New(scheduling.Config{ConfigText: text, Now: h.Now}, h, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "predicted-ttft-scorer") {
		t.Fatalf("New = %v, want an error naming the missing predicted-ttft-scorer", err)
	}
	text += "- type: predicted-ttft-scorer\n"
	if _, err := scheduling.New(scheduling.Config{ConfigText: text, Now: h.Now}, h, nil, nil); err != nil {
		t.Fatal(err)
	}
}
