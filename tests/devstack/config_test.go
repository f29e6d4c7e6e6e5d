package devstack

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestShippedConfigLoads(t *testing.T) {
	cfg, err := LoadConfig("../../deploy/local/devstack.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"us-east-1": "127.0.0.1:8080", "us-west-2": "127.0.0.1:8180", "eu-west-1": "127.0.0.1:8280"}
	wantAdmin := map[string]string{
		"us-east-1": "127.0.0.1:9090",
		"us-west-2": "127.0.0.1:9190",
		"eu-west-1": "127.0.0.1:9290",
	}
	for _, r := range cfg.Regions {
		if r.Router.Listen != want[r.Name] || r.Router.Admin != wantAdmin[r.Name] {
			t.Errorf("region %s router %+v, want listen %s admin %s", r.Name, r.Router, want[r.Name], wantAdmin[r.Name])
		}
	}
	if got := cfg.RTT("eu-west-1", "us-east-1"); got != 80*time.Millisecond {
		t.Errorf("RTT(eu, us-east) = %v, want 80ms", got)
	}
	if n := len(cfg.Regions[0].Clusters); n != 2 {
		t.Errorf("us-east-1 clusters = %d, want 2", n)
	}
}

func TestParseConfigErrors(t *testing.T) {
	base, err := os.ReadFile("../../deploy/local/devstack.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, from, to, want string
	}{
		{"unknown field", "timeScale: 1", "timeScale: 1\nbogus: 2", "bogus"},
		{"bad time scale", "timeScale: 1", "timeScale: 0", "timeScale"},
		{"no model", "model: meta-llama/Llama-3.1-8B-Instruct", "model: ''", "model"},
		{"duplicate cluster", "name: usw2-a", "name: use1-a", "clusters[0].name"},
		{"bad router address", "listen: 127.0.0.1:8180", "listen: nowhere", "router.listen"},
		{"bad pod count", "{profile: l40s, count: 2}]\n  - name: eu", "{profile: l40s, count: 0}]\n  - name: eu", "count"},
		{"latency names unknown region", "between: [us-west-2, eu-west-1]", "between: [us-west-2, mars-1]", "latency[2]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(string(base), tt.from, tt.to, 1)
			if src == string(base) {
				t.Fatalf("test case did not change the file (%q not found)", tt.from)
			}
			_, err := ParseConfig([]byte(src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want mention of %q", err, tt.want)
			}
		})
	}
}
