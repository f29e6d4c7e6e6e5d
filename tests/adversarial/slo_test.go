package adversarial

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// TestUnattainableSLOShedsSheddableOnly sends, through the real gateway, requests whose
// time-to-first-token objective (1 µs) no pod can meet. A sheddable one (priority -1) is refused
// at once with 429 slo_unattainable and the overflow marker, before any pod is picked (so it is
// not served late, and a router could try another cluster); a critical one is served on the
// nearest pod and counted as a missed objective; bad objective values get 400 naming the header.
// Every outcome lands in bounded metrics.
func TestUnattainableSLOShedsSheddableOnly(t *testing.T) {
	w := newWorld(t)
	gw := w.Gateway("adv-slo", "us-east-1", []string{w.Pod("h100").Listen})
	body := `{"model":"` + harness.TestModel + `","prompt":"hello there","max_tokens":64}`
	send := func(hdr map[string]string) (*http.Response, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, "http://"+gw.Listen+"/v1/completions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp, out
	}
	picks := func() float64 { return harness.MetricValue(t, gw.Metrics, "switchyard_gateway_scheduling_picks_total") }

	before := picks()
	resp, out := send(map[string]string{contract.HeaderSLOTTFT: "0.001", contract.HeaderPriority: "-1"})
	errBody, _ := out["error"].(map[string]any)
	if resp.StatusCode != http.StatusTooManyRequests || errBody["code"] != string(contract.ReasonSLOUnattainable) ||
		!contract.IsOverflow(resp.Header) || resp.Header.Get("Retry-After") == "" {
		t.Fatalf(
			"sheddable, unattainable: %d %v %v; want 429 slo_unattainable with the overflow marker and Retry-After",
			resp.StatusCode,
			out,
			resp.Header,
		)
	}
	if after := picks(); after != before {
		t.Fatalf("the refused request was scheduled to a pod (picks %v → %v)", before, after)
	}

	resp, out = send(map[string]string{contract.HeaderSLOTTFT: "0.001", contract.HeaderPriority: "5"})
	if resp.StatusCode != http.StatusOK || out["choices"] == nil {
		t.Fatalf("critical, unattainable: %d %v; want it served", resp.StatusCode, out)
	}
	resp, _ = send(map[string]string{contract.HeaderSLOTTFT: "60000", contract.HeaderPriority: "-1"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sheddable, attainable: %d; want it served", resp.StatusCode)
	}
	for _, v := range []string{"NaN", "-3", "1e99", "soon"} {
		resp, out = send(map[string]string{contract.HeaderSLOTPOT: v})
		errBody, _ = out["error"].(map[string]any)
		if resp.StatusCode != http.StatusBadRequest || errBody["param"] != contract.HeaderSLOTPOT {
			t.Fatalf("%s: %q: %d %v; want 400 naming the header", contract.HeaderSLOTPOT, v, resp.StatusCode, out)
		}
	}

	for _, c := range []struct {
		family string
		labels []string
		want   float64
	}{
		{"switchyard_gateway_scheduling_decisions_total", []string{"outcome=slo_unattainable"}, 1},
		{"switchyard_gateway_slo_requests_total", []string{"objective=none", "slo=ttft", "outcome=refused"}, 1},
		{"switchyard_gateway_slo_requests_total", []string{"objective=none", "slo=ttft", "outcome=missed"}, 1},
		{"switchyard_gateway_slo_requests_total", []string{"objective=none", "slo=ttft", "outcome=met"}, 1},
		{"switchyard_gateway_invalid_header_requests_total", []string{"header=" + contract.HeaderSLOTPOT}, 4},
		{"switchyard_gateway_requests_total", []string{"code=429"}, 1},
	} {
		if got := harness.MetricValue(t, gw.Metrics, c.family, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.family, c.labels, got, c.want)
		}
	}
	// The objective label is bounded: 2 objectives (none, other) × 2 slos × 3 outcomes without
	// configured objective names, whatever the requests named.
	if n := scrapeSeries(t, gw.Metrics)["switchyard_gateway_slo_requests_total"]; n != 12 {
		t.Errorf("switchyard_gateway_slo_requests_total has %d series, want 12", n)
	}
}
