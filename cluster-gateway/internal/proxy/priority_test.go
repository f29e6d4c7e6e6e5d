package proxy_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline/pipelinetest"
)

// Through the HTTP proxy, a priority header outside the configured range (-10..10 by default)
// or not an integer gets 400 with an OpenAI-style error naming the header, a log line and a
// count; a priority in range, or none, is served.
func TestPriorityRange(t *testing.T) {
	up := upstream(t, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"ok":true}`) })
	logs := pipelinetest.NewLog()
	e := newEnvWith(t, envOptions{log: logs.Logger}, up)
	tests := []struct {
		name, priority string
		status         int
	}{
		{"none", "", 200},
		{"highest band", "10", 200},
		{"lowest band", "-10", 200},
		{"inside", " 3 ", 200},
		{"above the range", "11", 400},
		{"below the range", "-11", 400},
		{"max int", "9223372036854775807", 400},
		{"not an integer", "urgent", 400},
		{"a fraction", "2.5", 400},
	}
	refused := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr map[string]string
			if tt.priority != "" {
				hdr = map[string]string{"X-Switchyard-Priority": tt.priority}
			}
			resp := post(t, e.url+"/v1/completions", `{"model":"llama","prompt":"x"}`, hdr)
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.status == 200 {
				return
			}
			refused++
			var got struct {
				Error struct{ Type, Param, Code, Message string } `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if got.Error.Param != "x-switchyard-priority" || got.Error.Type != "invalid_request_error" ||
				!strings.Contains(got.Error.Message, "from -10 to 10") {
				t.Fatalf("error %+v: want an invalid_request_error naming the header and its range", got.Error)
			}
		})
	}
	want := fmt.Sprintf(`
# HELP switchyard_gateway_invalid_header_requests_total Requests refused with 400 for a header the gateway cannot accept (a priority outside --min-priority..--max-priority or not an integer, a bad hand-back offer, a latency objective that is not milliseconds above 0 and at most an hour), by header.
# TYPE switchyard_gateway_invalid_header_requests_total counter
switchyard_gateway_invalid_header_requests_total{header="x-slo-tpot-ms"} 0
switchyard_gateway_invalid_header_requests_total{header="x-slo-ttft-ms"} 0
switchyard_gateway_invalid_header_requests_total{header="x-switchyard-hand-back-ms"} 0
switchyard_gateway_invalid_header_requests_total{header="x-switchyard-priority"} %d
`, refused)
	if err := testutil.GatherAndCompare(
		e.reg,
		strings.NewReader(want),
		"switchyard_gateway_invalid_header_requests_total",
	); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), `"msg":"request refused: invalid header"`); n != refused {
		t.Fatalf("%d refusals logged, want %d: %s", n, refused, logs.String())
	}
}

// Through the HTTP proxy, a latency objective that is not milliseconds above 0 and at most an
// hour gets 400 naming the header, and is counted; a good one is served and reaches the model
// server unchanged (llm-d's servers and sidecars read the same headers).
func TestSLOHeaders(t *testing.T) {
	var seen http.Header
	up := upstream(
		t,
		func(w http.ResponseWriter, r *http.Request) { seen = r.Header.Clone(); fmt.Fprint(w, `{"ok":true}`) },
	)
	e := newEnvWith(t, envOptions{}, up)
	tests := []struct {
		name, header, value string
		status              int
	}{
		{"ttft", "X-Slo-Ttft-Ms", "500", 200},
		{"tpot, a fraction", "x-slo-tpot-ms", "12.5", 200},
		{"ttft not a number", "X-Slo-Ttft-Ms", "soon", 400},
		{"tpot negative", "X-Slo-Tpot-Ms", "-1", 400},
		{"ttft NaN", "X-Slo-Ttft-Ms", "NaN", 400},
		{"ttft huge", "X-Slo-Ttft-Ms", "1e30", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen = nil
			resp := post(t, e.url+"/v1/completions", `{"model":"llama","prompt":"x"}`, map[string]string{tt.header: tt.value})
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.status == 200 {
				if got := seen.Get(tt.header); got != tt.value {
					t.Fatalf("model server saw %s: %q, want %q passed through", tt.header, got, tt.value)
				}
				return
			}
			var got struct {
				Error struct{ Type, Param, Code string } `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if got.Error.Param != strings.ToLower(tt.header) || got.Error.Code != "invalid_request" || seen != nil {
				t.Fatalf("error %+v (upstream saw %v): want invalid_request naming %s, not forwarded", got.Error, seen, tt.header)
			}
		})
	}
	for header, want := range map[string]float64{"x-slo-ttft-ms": 3, "x-slo-tpot-ms": 1} {
		if got := invalidHeaders(t, e.reg, header); got != want {
			t.Errorf("invalid %s counted %v times, want %v", header, got, want)
		}
	}
}

// invalidHeaders reads switchyard_gateway_invalid_header_requests_total{header}.
func invalidHeaders(t *testing.T, reg prometheus.Gatherer, header string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == "switchyard_gateway_invalid_header_requests_total" && m.GetLabel()[0].GetValue() == header {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no invalid header series for %s", header)
	return 0
}
