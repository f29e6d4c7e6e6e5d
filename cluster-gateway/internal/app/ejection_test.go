package app_test

import (
	"fmt"
	"strings"
	"testing"
)

// metricValue is the value of the unlabelled sample name on the gateway's /metrics page.
func metricValue(t *testing.T, g *gateway, name string) string {
	t.Helper()
	for _, line := range strings.Split(get(t, "http://"+g.MetricsAddr()+"/metrics"), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	t.Fatalf("/metrics lacks %s", name)
	return ""
}

// When every pod fails, passive health ejects at most --max-ejection-percent of the pool (half
// by default); the others stay in rotation and still get the traffic.
func TestEjectionCapKeepsHalfThePool(t *testing.T) {
	tests := []struct {
		name        string
		flags       []string
		wantEjected int
	}{
		{"default 50%", nil, 2},
		{"25%", []string{"--max-ejection-percent=25"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startGateway(t, 4, tt.flags...)
			for _, p := range g.pods {
				p.failing.Store(true)
			}
			for range 40 {
				if resp, _ := post(t, g.http+"/v1/completions", `{"model":"llama","prompt":"x"}`); resp.StatusCode != 500 {
					t.Fatalf("status %d, want the pods' 500", resp.StatusCode)
				}
			}
			if got := metricValue(t, g, "switchyard_gateway_endpoints_ejected"); got != fmt.Sprint(tt.wantEjected) {
				t.Fatalf("%s of 4 pods ejected, want %d", got, tt.wantEjected)
			}
			if got := metricValue(t, g, "switchyard_gateway_endpoint_ejections_refused_total"); got == "0" {
				t.Fatal("no ejection refused while every pod failed")
			}
			before := make([]int64, len(g.pods))
			for i, p := range g.pods {
				before[i] = p.requests.Load()
			}
			for range 20 {
				post(t, g.http+"/v1/completions", `{"model":"llama","prompt":"x"}`)
			}
			// Every request still reached a pod (none was answered "no endpoint"); which of the
			// pods kept in rotation took them is the scheduler's choice.
			var sent int64
			for i, p := range g.pods {
				sent += p.requests.Load() - before[i]
			}
			if sent < 20 {
				t.Fatalf("%d of 20 requests reached a pod, want all of them (the cap keeps %d in rotation)", sent, 4-tt.wantEjected)
			}
		})
	}
}
