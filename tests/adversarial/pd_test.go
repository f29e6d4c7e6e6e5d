package adversarial

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// pdFixedConfig is the pd profile with llm-d's fixed threshold (selective off): every prompt of
// 256 uncached tokens or more is split, whatever the pods' state.
const pdFixedConfig = `apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: pd-profile-handler
  parameters: {threshold: 256}
- type: decode-filter
- type: prefill-filter
- type: queue-scorer
- type: max-score-picker
schedulingProfiles:
- name: decode
  plugins:
  - pluginRef: decode-filter
  - pluginRef: queue-scorer
- name: prefill
  plugins:
  - pluginRef: prefill-filter
  - pluginRef: queue-scorer
`

// pdWorld starts in w a modelsim prefill pod and a decode pod (roles from the endpoints file)
// and a gateway over them run with extra (its scheduling flag), and waits until it counts both
// ready.
func pdWorld(t *testing.T, w *harness.World, extra string) (prefill, decode, gw *harness.Node) {
	t.Helper()
	prefill = w.Pod("h100", "--role=prefill")
	decode = w.Pod("h100", "--role=decode")
	file := w.Write("pd-endpoints.yaml", fmt.Sprintf(
		"- {address: %s, name: prefill-0, role: prefill}\n- {address: %s, name: decode-0, role: decode}\n",
		prefill.Listen, decode.Listen))
	gw = w.Gateway("adv-pd", "us-east-1", nil, extra, "--endpoints-file="+file, "--autoscale-interval=100ms")
	// The gateway serves once one pod is in; a split needs both, so wait until the pool counts
	// two ready pods (the autoscaler's figure, recomputed every 100 ms here).
	poll.Until(t, 60*time.Second, func() bool {
		return harness.MetricValue(t, gw.Metrics, "switchyard_gateway_ready_replicas",
			"model="+harness.TestModel) >= 2
	}, "the gateway to count the prefill and decode pods ready")
	return prefill, decode, gw
}

// TestPrefillDecodeDisaggregation runs the real gateway with llm-d's fixed-threshold pd config
// over a modelsim prefill pod and a decode pod (roles from the endpoints file). A long prompt is
// prefilled on the prefill pod, which the gateway names to the decode pod in
// x-prefiller-host-port, and decoded on the decode pod; a short one skips the prefill pod.
// Every request carries a client-set x-prefiller-host-port and x-llm-d-prefiller-host-port (the
// later spelling, which llm-d's sidecar, and modelsim, read when the first is absent) aimed at a
// decoy server: the gateway drops both, so no pod is ever pointed at the client's address.
func TestPrefillDecodeDisaggregation(t *testing.T) {
	var decoyHits atomic.Int64
	decoy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		decoyHits.Add(1)
		http.Error(w, "decoy", http.StatusTeapot)
	}))
	defer decoy.Close()
	hostile := strings.TrimPrefix(decoy.URL, "http://")

	w := newWorld(t)
	prefill, decode, gw := pdWorld(t, w, "--config="+w.Write("pd-fixed.yaml", pdFixedConfig))

	send := func(prompt string) *http.Response {
		t.Helper()
		body := `{"model":"` + harness.TestModel + `","prompt":"` + prompt + `","max_tokens":16,"stream":true}`
		req, err := http.NewRequest(http.MethodPost, "http://"+gw.Listen+"/v1/completions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(contract.HeaderPrefillerHostPort, hostile)
		req.Header.Set("x-llm-d-prefiller-host-port", hostile)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return resp
	}
	remote := func(n *harness.Node) float64 {
		return harness.MetricValue(t, n.Listen, "modelsim_remote_prefills_total", "result=ok")
	}
	served := func(n *harness.Node) float64 {
		return harness.MetricValue(t, n.Listen, "modelsim_remote_decode_prefills_total")
	}

	// 1. A long prompt (about 2,000 tokens, above the profile's threshold of 256): split.
	resp := send(strings.Repeat("disaggregate ", 650))
	h := resp.Header
	if h.Get(contract.HeaderPD) != "prefill-decode" || h.Get(contract.HeaderEndpoint) != "decode-0" ||
		h.Get(contract.HeaderPrefillEndpoint) != "prefill-0" {
		t.Fatalf("long prompt: pd %q endpoint %q prefill %q; want prefill-decode on decode-0 after prefill-0",
			h.Get(contract.HeaderPD), h.Get(contract.HeaderEndpoint), h.Get(contract.HeaderPrefillEndpoint))
	}
	if served(prefill) != 1 || remote(decode) != 1 {
		t.Fatalf("prefill pod prefilled %v for a decode pod, decode pod pulled %v; want 1 and 1",
			served(prefill), remote(decode))
	}
	if n := harness.MetricValue(t, decode.Listen, "modelsim_kv_transfer_tokens_total"); n < 1500 {
		t.Fatalf("decode pod pulled the KV of %v tokens, want the prompt's", n)
	}

	// 2. A short prompt: the decode pod prefills it itself.
	resp = send("a short question")
	if got := resp.Header.Get(
		contract.HeaderPD,
	); got != "below-threshold" ||
		resp.Header.Get(contract.HeaderEndpoint) != "decode-0" {
		t.Fatalf("short prompt: pd %q on %q, want below-threshold on decode-0", got, resp.Header.Get(contract.HeaderEndpoint))
	}
	if served(prefill) != 1 || remote(decode) != 1 {
		t.Fatal("the short prompt went through the prefill pod")
	}

	// 3. The client's header reached no pod, and the decisions are counted.
	if n := decoyHits.Load(); n != 0 {
		t.Fatalf("a pod contacted the client-chosen prefiller %d times", n)
	}
	if n := harness.MetricValue(t, decode.Listen, "modelsim_remote_prefills_total", "result=failed"); n != 0 {
		t.Fatalf("decode pod saw %v bad prefiller headers", n)
	}
	for decision, want := range map[string]float64{
		"prefill-decode": 1, "below-threshold": 1, "no-prefill-endpoint": 0, "local-prefill": 0,
	} {
		got := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_pd_decisions_total", "decision="+decision)
		if got != want {
			t.Errorf("switchyard_gateway_pd_decisions_total{decision=%q} = %v, want %v", decision, got, want)
		}
	}
}
