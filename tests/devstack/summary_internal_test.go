package devstack

import (
	"bytes"
	"strings"
	"testing"
)

// TestSummaryFitsOneScreen: the summary names every router, gateway and pod with its URL, the
// capacity map and where its token is, and two curl commands, in at most 30 lines.
func TestSummaryFitsOneScreen(t *testing.T) {
	cfg, err := LoadConfig("../../deploy/local/devstack.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s := &Stack{
		cfg:       cfg,
		opt:       Options{Out: &out, DataDir: ".devstack", BinDir: ".bin"},
		tokenFile: ".devstack/admin-token",
		Gateways:  map[string]string{},
		Pods:      map[string][]string{},
	}
	for _, r := range cfg.Regions {
		for _, c := range r.Clusters {
			s.Gateways[c.Name] = "http://127.0.0.1:40001"
			s.Pods[c.Name] = []string{"127.0.0.1:41001", "127.0.0.1:41002", "127.0.0.1:41003", "127.0.0.1:41004"}
		}
	}
	s.printSummary()
	text := out.String()
	if n := strings.Count(text, "\n"); n > 30 {
		t.Errorf("the summary takes %d lines, more than a screen:\n%s", n, text)
	}
	want := []string{"router http://127.0.0.1:8080", "admin http://127.0.0.1:9090", "http://127.0.0.1:9090/map/",
		"http://127.0.0.1:8280", "gateway http://127.0.0.1:40001", "pods http://127.0.0.1:41001 http://127.0.0.1:41002",
		"log in with the admin token in .devstack/admin-token", ".bin/switchyardctl"}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the summary lacks %q:\n%s", w, text)
		}
	}
	if n := strings.Count(text, "curl "); n != 2 {
		t.Errorf("%d curl commands, want 2:\n%s", n, text)
	}
	for _, r := range cfg.Regions {
		for _, c := range r.Clusters {
			if !strings.Contains(text, c.Name) || !strings.Contains(text, r.Name) {
				t.Errorf("the summary lacks %s/%s", r.Name, c.Name)
			}
		}
	}
}
