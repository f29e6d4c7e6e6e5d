package deploy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	metricRef    = regexp.MustCompile(`\bswitchyard_[a-z_]+`)
	fullName     = regexp.MustCompile(`"(switchyard_[a-z_]+)"`)
	gossipSuffix = regexp.MustCompile(`(?:opts\(|Name:\s*)"([a-z_]+)"`)
)

// definedMetrics collects the metric names the binaries register, from their Go source.
func definedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, mod := range []string{"cluster-gateway", "global-router", "gossip"} {
		err := filepath.WalkDir(repoPath(t, mod), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src := string(readFile(t, path))
			for _, m := range fullName.FindAllStringSubmatch(src, -1) {
				names[m[1]] = true
			}
			// The gossip module names its metrics switchyard_<subsystem>_..., the subsystem "gossip"
			// by default (Config.MetricsSubsystem; a router's pool of aggregators uses another).
			if mod == "gossip" && (strings.Contains(src, `ns, sub = "switchyard", "gossip"`) ||
				strings.Contains(src, `const ns = "switchyard"`)) {
				for _, m := range gossipSuffix.FindAllStringSubmatch(src, -1) {
					names["switchyard_gossip_"+m[1]] = true
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// TestGrafanaDashboardMetrics checks the dashboard is valid JSON and every metric it queries is
// registered by the code (a renamed metric fails here).
func TestGrafanaDashboardMetrics(t *testing.T) {
	var dash struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(readFile(t, repoPath(t, "deploy", "grafana", "switchyard.json")), &dash); err != nil {
		t.Fatal(err)
	}
	if dash.Title == "" || dash.UID == "" {
		t.Fatal("dashboard needs a title and uid")
	}
	defined := definedMetrics(t)
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, m := range metricRef.FindAllString(tg.Expr, -1) {
				base := m
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					base = strings.TrimSuffix(base, suf)
				}
				used[base] = true
				if !defined[base] {
					t.Errorf("panel %q queries %s, which no binary registers", p.Title, m)
				}
			}
		}
	}
	for _, prefix := range []string{"switchyard_gateway_", "switchyard_router_", "switchyard_gossip_"} {
		n := 0
		for m := range used {
			if strings.HasPrefix(m, prefix) {
				n++
			}
		}
		if n < 3 {
			t.Errorf("dashboard uses %d %s* metrics, want at least 3", n, prefix)
		}
	}
}
