package devstack

import (
	"bytes"
	"os"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzParseConfig feeds arbitrary stack files: an accepted one validates, and re-encoding it is a
// fixed point (encode, parse, encode gives the same bytes), so nothing read is lost or changed.
func FuzzParseConfig(f *testing.F) {
	shipped, err := os.ReadFile("../../deploy/local/devstack.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(shipped)
	f.Add([]byte("model: m\ntimeScale: .inf\nregions:\n- name: r\n  router: {listen: ':1', admin: '[::1]:2'}\n" +
		"  clusters: [{name: c, pods: [{profile: h100, count: 1}]}]\nlatency: [{between: [r, r], rtt: 1h}]\n"))
	f.Add(
		[]byte(
			"model: m\nregions: [{name: r, router: {listen: a:1, admin: a:2}, clusters: [{name: r, pods: [{profile: x, count: 2}]}]}]\nlatency: [{between: [r], rtt: -1s}]\n",
		),
	)
	f.Add([]byte("model: m\nadapters: &a [x, y]\nregions: []\n"))
	f.Add([]byte("model: m\ntimeScale: .nan\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err != nil {
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("accepted an invalid config: %v", err)
		}
		once, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := ParseConfig(once)
		if err != nil {
			t.Fatalf("re-encoded config does not parse: %v\n%s", err, once)
		}
		twice, err := yaml.Marshal(again)
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("re-encoding is not a fixed point: %v\n%s\n---\n%s", err, once, twice)
		}
		for _, a := range cfg.Regions {
			for _, b := range cfg.Regions {
				if cfg.RTT(a.Name, b.Name) != cfg.RTT(b.Name, a.Name) {
					t.Fatalf("RTT(%s, %s) is not symmetric", a.Name, b.Name)
				}
			}
		}
	})
}
