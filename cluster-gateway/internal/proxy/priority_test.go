package proxy_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

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
# HELP switchyard_gateway_invalid_header_requests_total Requests refused with 400 for a header flow control cannot accept (a priority outside --min-priority..--max-priority or not an integer, a bad hand-back offer), by header.
# TYPE switchyard_gateway_invalid_header_requests_total counter
switchyard_gateway_invalid_header_requests_total{header="x-switchyard-hand-back-ms"} 0
switchyard_gateway_invalid_header_requests_total{header="x-switchyard-priority"} %d
`, refused)
	if err := testutil.GatherAndCompare(e.reg, strings.NewReader(want), "switchyard_gateway_invalid_header_requests_total"); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), `"msg":"request refused: invalid header"`); n != refused {
		t.Fatalf("%d refusals logged, want %d: %s", n, refused, logs.String())
	}
}
