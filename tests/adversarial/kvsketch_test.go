package adversarial

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// kvCluster is one cluster of the sketch test: a gateway following the KV events of its one pod.
type kvCluster struct {
	name    string
	gw, pod *harness.Node
}

func newKVCluster(t *testing.T, w *harness.World, name, cfg string) *kvCluster {
	t.Helper()
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	c := &kvCluster{name: name}
	c.pod = w.Pod("h100", "--kv-events-endpoint=tcp://"+port, "--hash-seed=7")
	c.gw = w.Gateway(name, "us-east-1", []string{c.pod.Listen}, "--config="+cfg, "--kv-events-endpoint=tcp://"+port)
	c.waitHeard(t, "warm-up "+name)
	return c
}

// waitHeard sends prompts straight to the pod until the gateway counts more of its BlockStored
// events than before.
func (c *kvCluster) waitHeard(t *testing.T, tag string) {
	t.Helper()
	before, n := c.stored(t), 0
	poll.Until(t, 30*time.Second, func() bool {
		n++
		sendCompletion(t, "http://"+c.pod.Listen, fmt.Sprintf("%s %d %s", tag, n, strings.Repeat("w", 200)))
		return c.stored(t) > before
	}, "KV events of "+c.name+"'s pod to reach its gateway")
}

func (c *kvCluster) stored(t *testing.T) float64 {
	t.Helper()
	return harness.MetricValue(t, c.gw.Metrics, "switchyard_gateway_kv_events_total", "endpoint="+c.pod.Listen,
		"kind=BlockStored")
}

func sendCompletion(t *testing.T, base, prompt string) http.Header {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": harness.TestModel, "prompt": prompt, "max_tokens": 2})
	resp, err := http.Post(base+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("completion at %s: %d", base, resp.StatusCode)
	}
	return resp.Header
}

// explained is the part of an ExplainRoute answer the test reads.
type explained struct {
	ChosenCluster string `json:"chosenCluster"`
	Candidates    []struct {
		Cluster    string  `json:"cluster"`
		EstimateMs float64 `json:"estimateMs"`
	} `json:"candidates"`
}

func (e explained) estimate(cluster string) float64 {
	for _, c := range e.Candidates {
		if c.Cluster == cluster {
			return c.EstimateMs
		}
	}
	return 0
}

func explainRoute(t *testing.T, admin, token, prompt string) explained {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"model": harness.TestModel, "prompt": prompt})
	req, err := http.NewRequest(http.MethodPost, admin+"/switchyard.admin.v1.AdminService/ExplainRoute",
		bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out explained
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("ExplainRoute: %d %v", resp.StatusCode, err)
	}
	return out
}

// TestKVSketchSteersTheRouter runs a router over two clusters whose gateways build their gossiped
// prefix sketch from their pods' KV events. A long prompt is routed through both gateways, so
// both pods cache it and both sketches hold it; then one cluster's pod restarts with an empty
// cache. Its gateway learns that from the pod's events (the sequence starts again), its next
// summary no longer advertises the prefix although its gateway routed it, and the router prefers
// the cluster whose pod still holds it. A sketch of routed prompts would keep advertising it.
func TestKVSketchSteersTheRouter(t *testing.T) {
	w := newWorld(t)
	cfg := w.Write("precise.yaml", kvEventsConfig)
	a := newKVCluster(t, w, "adv-sketch-a", cfg)
	b := newKVCluster(t, w, "adv-sketch-b", cfg)
	rt := w.Router("us-east-1", "")
	admin, token := "http://"+rt.Admin, w.Token()
	if err := harness.WaitClusters(context.Background(), admin, token, 2, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	prefix := strings.Repeat("a long shared document, cached where it was read first. ", 560) // ~32 KB
	other := strings.Repeat("an unrelated document of the same length, cached nowhere. ", 540)
	for _, c := range []*kvCluster{a, b} {
		before := c.stored(t)
		if h := sendCompletion(t, "http://"+c.gw.Listen, prefix+"first question"); h.Get(contract.HeaderPrefixScoring) !=
			string(contract.PrefixScoringPrecise) {
			t.Fatalf("%s: the prompt was not scored precisely (%q)", c.name, h.Get(contract.HeaderPrefixScoring))
		}
		poll.Until(t, 20*time.Second, func() bool { return c.stored(t) >= before+400 }, c.name+"'s BlockStored events")
	}
	// cached reports whether the router sees the prefix cached at cluster: its estimate for the
	// prompt well below its estimate for a prompt of the same length cached nowhere.
	cached := func(e, base explained, cluster string) bool {
		return e.estimate(cluster) > 0 && e.estimate(cluster) < 0.6*base.estimate(cluster)
	}
	var e, base explained
	poll.Until(t, 20*time.Second, func() bool {
		e, base = explainRoute(t, admin, token, prefix+"q"), explainRoute(t, admin, token, other+"q")
		return cached(e, base, a.name) && cached(e, base, b.name)
	}, "both clusters' sketches to hold the prefix")

	// b's pod restarts with an empty cache; its first events (sequence 0) clear b's index.
	b.pod.Kill()
	if err := b.pod.Start(); err != nil {
		t.Fatal(err)
	}
	gaps := func() float64 {
		return harness.MetricValue(t, b.gw.Metrics, "switchyard_gateway_kv_events_sequence_gaps_total",
			"endpoint="+b.pod.Listen)
	}
	b.waitHeard(t, "after restart")
	if gaps() < 1 {
		t.Fatalf("b's gateway saw no sequence restart")
	}
	// The router counts the requests it sent a cluster as queued there until the cluster's next
	// summary, so each request is sent once the router sees the cluster idle again.
	for i := range 2 {
		poll.Until(t, 20*time.Second, func() bool {
			e, base = explainRoute(t, admin, token, prefix+"q"), explainRoute(t, admin, token, other+"q")
			return cached(e, base, a.name) && !cached(e, base, b.name) && e.ChosenCluster == a.name
		}, "b's sketch to drop the prefix its pod no longer holds, and the router to choose a")
		h := sendCompletion(t, "http://"+rt.Listen, fmt.Sprintf("%squestion %d", prefix, i))
		if got := h.Get(contract.HeaderCluster); got != a.name {
			t.Errorf("request %d sharing the prefix went to %s, want %s (whose pod holds it)", i, got, a.name)
		}
	}
}
