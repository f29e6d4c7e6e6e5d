package deploy_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// TestChartsSetGOMEMLIMIT checks both charts set GOMEMLIMIT to 90% of the container's memory
// limit (which the binaries' --memory-limit honours), leave it out without a limit, and refuse
// a limit they cannot read.
func TestChartsSetGOMEMLIMIT(t *testing.T) {
	for _, chart := range charts {
		for _, tc := range []struct {
			name  string
			limit any
			want  string
		}{
			{"default", nil, "921MiB"},
			{"Gi", "2Gi", "1843MiB"},
			{"decimal", "1500M", "1287MiB"},
			{"bytes", 1073741824, "921MiB"},
			{"no limit", "", ""},
		} {
			t.Run(chart+"/"+tc.name, func(t *testing.T) {
				var vals map[string]any
				switch tc.limit {
				case nil:
				case "": // null deletes the default limits
					vals = map[string]any{"resources": map[string]any{"limits": nil}}
				default:
					vals = map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": tc.limit}}}
				}
				dep := find(renderObjects(t, chart, vals), "Deployment")[0].typed.(*appsv1.Deployment)
				got := ""
				for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
					if e.Name == "GOMEMLIMIT" {
						got = e.Value
					}
				}
				if got != tc.want {
					t.Fatalf("GOMEMLIMIT = %q, want %q", got, tc.want)
				}
			})
		}
		t.Run(chart+"/unreadable limit", func(t *testing.T) {
			_, err := renderChart(
				t,
				chart,
				map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "1.5Gi"}}},
			)
			if err == nil || !strings.Contains(err.Error(), "resources.limits.memory") {
				t.Fatalf("render error = %v, want one naming resources.limits.memory", err)
			}
		})
	}
}

// TestChartsNetworkPolicy checks the default NetworkPolicy of each chart: it selects the
// chart's pods, leaves the data port open, admits the restricted ports only from their peers,
// and is gone with networkPolicy.enabled=false.
func TestChartsNetworkPolicy(t *testing.T) {
	restricted := map[string]map[int32]string{
		"cluster-gateway": {
			9002: "app.kubernetes.io/managed-by",
			9090: "kubernetes.io/metadata.name",
			7946: "app.kubernetes.io/part-of",
			7947: "app.kubernetes.io/instance", // the replica pool: the release's own gateways
		},
		"global-router": {9090: "", 9100: "kubernetes.io/metadata.name", 7946: "app.kubernetes.io/part-of"},
	}
	open := map[string]int32{"cluster-gateway": 8080, "global-router": 8080}
	for _, chart := range charts {
		t.Run(chart, func(t *testing.T) {
			objs := renderObjects(t, chart, nil)
			nps := find(objs, "NetworkPolicy")
			if len(nps) != 1 {
				t.Fatalf("%d NetworkPolicies, want 1", len(nps))
			}
			np := nps[0].typed.(*networkingv1.NetworkPolicy)
			dep := find(objs, "Deployment")[0].typed.(*appsv1.Deployment)
			for k, v := range np.Spec.PodSelector.MatchLabels {
				if dep.Spec.Template.Labels[k] != v {
					t.Errorf("the policy selects %s=%s, which the pods lack", k, v)
				}
			}
			seen := map[int32]bool{}
			for _, rule := range np.Spec.Ingress {
				for _, p := range rule.Ports {
					port := p.Port.IntVal
					seen[port] = true
					if port == open[chart] {
						if len(rule.From) != 0 {
							t.Errorf("port %d restricted by default: %v", port, rule.From)
						}
						continue
					}
					key, ok := restricted[chart][port]
					if !ok {
						t.Errorf("unexpected port %d", port)
						continue
					}
					if len(rule.From) == 0 {
						t.Errorf("port %d open to anyone", port)
					}
					if key != "" && !strings.Contains(rule.String(), key) {
						t.Errorf("port %d: peers %v do not select by %s", port, rule.From, key)
					}
				}
			}
			for port := range restricted[chart] {
				if !seen[port] {
					t.Errorf("port %d not in the policy: with a policy selecting the pods it would be closed", port)
				}
			}
			if !seen[open[chart]] {
				t.Errorf("data port %d not in the policy", open[chart])
			}
			if off := find(
				renderObjects(t, chart, map[string]any{"networkPolicy": map[string]any{"enabled": false}}),
				"NetworkPolicy",
			); len(
				off,
			) != 0 {
				t.Errorf("networkPolicy.enabled=false still renders %d policies", len(off))
			}
		})
	}
}
