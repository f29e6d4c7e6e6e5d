package deploy_test

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
)

const testNamespace = "switchyard"

// charts are the charts under deploy/charts.
var charts = []string{"cluster-gateway", "global-router"}

// renderChart renders a chart as `helm template` does with the given values over the defaults,
// and returns the manifests by template path (NOTES.txt left out).
func renderChart(t *testing.T, chart string, vals map[string]any) (map[string]string, error) {
	t.Helper()
	ch, err := loader.Load(repoPath(t, "deploy", "charts", chart))
	if err != nil {
		t.Fatalf("load chart %s: %v", chart, err)
	}
	opts := common.ReleaseOptions{Name: "sy", Namespace: testNamespace, Revision: 1, IsInstall: true}
	rv, err := util.ToRenderValues(ch, vals, opts, common.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	for name := range out {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(out, name)
		}
	}
	return out, nil
}

// renderObjects renders a chart and decodes every object strictly.
func renderObjects(t *testing.T, chart string, vals map[string]any) []object {
	t.Helper()
	out, err := renderChart(t, chart, vals)
	if err != nil {
		t.Fatalf("render %s: %v", chart, err)
	}
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	var objs []object
	for _, name := range names {
		got, err := decodeStrict(name, out[name])
		if err != nil {
			t.Fatalf("decode: %v\n%s", err, out[name])
		}
		objs = append(objs, got...)
	}
	for _, o := range objs {
		if o.typed == nil && o.gvk.Kind != "ServiceMonitor" {
			t.Errorf("%s: %s is not a known Kubernetes type", o.source, o.gvk)
		}
		if o.gvk.Kind == "ServiceMonitor" {
			requireFields(t, o, "spec.selector.matchLabels", "spec.endpoints")
		}
		if ns := o.raw.GetNamespace(); ns == "" {
			t.Errorf("%s: %s %s has no namespace", o.source, o.gvk.Kind, o.name())
		}
	}
	return objs
}

// TestChartsLint runs helm lint on each chart with its defaults and with every value set.
func TestChartsLint(t *testing.T) {
	for chart, sets := range map[string]map[string]map[string]any{
		"cluster-gateway": gatewayValueSets,
		"global-router":   routerValueSets,
	} {
		for name, vals := range sets {
			t.Run(chart+"/"+name, func(t *testing.T) {
				res := lint.RunAll(repoPath(t, "deploy", "charts", chart), vals, testNamespace)
				for _, m := range res.Messages {
					if m.Severity >= support.WarningSev {
						t.Errorf("helm lint: %v", m)
					} else {
						t.Logf("helm lint: %v", m)
					}
				}
			})
		}
	}
}

func TestChartsRenderWithDefaults(t *testing.T) {
	for _, chart := range charts {
		t.Run(chart, func(t *testing.T) {
			objs := renderObjects(t, chart, nil)
			if len(find(objs, "Deployment")) != 1 {
				t.Fatalf("want one Deployment, got %d", len(find(objs, "Deployment")))
			}
		})
	}
}

// TestChartsRenderFailures checks the templates refuse values that cannot work.
func TestChartsRenderFailures(t *testing.T) {
	tests := []struct {
		chart string
		name  string
		vals  map[string]any
		want  string
	}{
		{
			"cluster-gateway",
			"pool and endpoints",
			map[string]any{"endpoints": []any{"10.0.0.1:8000"}},
			"either pool.name or endpoints",
		},
		{"cluster-gateway", "no discovery", map[string]any{"pool": map[string]any{"name": ""}}, "set pool.name"},
		{"cluster-gateway", "unknown profile", map[string]any{"profile": "fastest"}, "profile"},
		{"cluster-gateway", "no cluster", map[string]any{"cluster": ""}, "cluster is required"},
		{
			"cluster-gateway",
			"client certificates without TLS",
			map[string]any{"tls": map[string]any{"requireClientCertificates": true}},
			"tls.secretName",
		},
		{
			"cluster-gateway",
			"ext_proc certificate without secure serving",
			map[string]any{"extProc": map[string]any{"certSecretName": "epp-tls"}},
			"needs extProc.secureServing",
		},
		{
			"cluster-gateway",
			"pdb blocks drains",
			map[string]any{"podDisruptionBudget": map[string]any{"minAvailable": 2}},
			"minAvailable",
		},
		{"global-router", "embedded etcd with two replicas", map[string]any{"replicaCount": 2}, "replicaCount to 1"},
		{
			"global-router",
			"dns sync without config",
			map[string]any{"dnsSync": map[string]any{"enabled": true}},
			"dnsSync.config",
		},
		{
			"global-router",
			"bad gossip profile",
			map[string]any{"gossip": map[string]any{"profile": "moon"}},
			"gossip.profile",
		},
		{
			"global-router",
			"unknown policy-unavailable action",
			map[string]any{"policyUnavailable": "defaults"},
			"policyUnavailable must be refuse or local",
		},
		{
			"global-router",
			"client certificates without TLS",
			map[string]any{"tls": map[string]any{"requireClientCertificates": true}},
			"needs tls.secretName",
		},
		{
			"global-router",
			"admin client certificates without TLS",
			map[string]any{"admin": map[string]any{"tls": map[string]any{"requireClientCertificates": true}}},
			"admin.tls.secretName",
		},
		{
			"global-router",
			"etcd TLS with the embedded etcd",
			map[string]any{"etcd": map[string]any{"tls": map[string]any{"secretName": "s"}}},
			"give etcd.endpoints",
		},
		{
			"global-router",
			"etcd user without a password secret",
			map[string]any{"etcd": map[string]any{"endpoints": []any{"https://e:2379"},
				"auth": map[string]any{"username": "u"}}},
			"etcd.auth.username and etcd.auth.secretName",
		},
	}
	for _, tt := range tests {
		t.Run(tt.chart+"/"+tt.name, func(t *testing.T) {
			_, err := renderChart(t, tt.chart, tt.vals)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("render error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestChartFilesDocumented(t *testing.T) {
	for _, chart := range charts {
		t.Run(chart, func(t *testing.T) {
			readme := string(readFile(t, repoPath(t, "deploy", "charts", chart, "README.md")))
			values := string(readFile(t, filepath.Join(repoPath(t, "deploy", "charts", chart), "values.yaml")))
			// Every top-level key of values.yaml is commented and appears in the README.
			lines := strings.Split(values, "\n")
			for i, l := range lines {
				if l == "" || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "#") {
					continue
				}
				key, _, _ := strings.Cut(l, ":")
				if !strings.Contains(readme, "`"+key) {
					t.Errorf("values key %q is not documented in README.md", key)
				}
				if i == 0 || !strings.HasPrefix(strings.TrimSpace(lines[i-1]), "#") && !strings.HasSuffix(l, ":") {
					t.Errorf("values key %q has no comment", key)
				}
			}
		})
	}
}
