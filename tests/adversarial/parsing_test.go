package adversarial

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

// trickyBodies are request bodies that JSON readers read differently: duplicate keys, keys that
// differ only in case (encoding/json folds case, Python's json does not), escaped keys, invalid
// UTF-8, trailing data. Each has the status both tiers must answer and, for a 400, the field the
// error must name.
var trickyBodies = []struct {
	name, body string
	status     int
	param      string
}{
	{"plain", `{"model":"test-model","prompt":"hi","max_tokens":1}`, 200, ""},
	{"escaped model name", `{"model":"te\u0073t-model","prompt":"hi","max_tokens":1}`, 200, ""},
	{"case-variant model after", `{"model":"test-model","Model":"open","prompt":"hi"}`, 400, "model"},
	{"case-variant model before", `{"MODEL":"open","model":"test-model","prompt":"hi"}`, 400, "model"},
	{"case-variant model alone", `{"Model":"test-model","prompt":"hi"}`, 400, "model"},
	{"duplicate model", `{"model":"open","model":"test-model","prompt":"hi"}`, 400, "model"},
	{"escaped duplicate model", `{"model":"open","\u006dodel":"test-model"}`, 400, "model"},
	{"duplicate stream", `{"model":"test-model","stream":false,"stream":true,"prompt":"hi"}`, 400, "stream"},
	{"long-s stream", "{\"model\":\"test-model\",\"stream\":false,\"\u017ftream\":true}", 400, "stream"},
	{"case-variant priority", `{"model":"test-model","priority":1,"PRIORITY":9}`, 400, "priority"},
	{"fractional priority", `{"model":"test-model","priority":1.5}`, 400, ""},
	{"null model", `{"model":null,"prompt":"hi"}`, 400, ""},
	{"model not a string", `{"model":["test-model"],"prompt":"hi"}`, 400, ""},
	{"trailing object", `{"model":"test-model","prompt":"hi"}{"model":"open"}`, 400, ""},
	{"byte-order mark", "\xef\xbb\xbf{\"model\":\"test-model\"}", 400, ""},
	{"deep nesting", `{"model":"test-model","x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`, 400, ""},
	{"unknown model", `{"model":"open","prompt":"hi"}`, 404, "model"},
	{"invalid UTF-8 model", "{\"model\":\"test-model\xff\",\"prompt\":\"hi\"}", 404, "model"},
}

// TestTiersAgreeOnTrickyBodies sends every tricky body to a gateway directly and through a
// router in front of it: both tiers read the body with the same function, so they answer the
// same status, and a body one tier would route as one model never reaches the other as another.
func TestTiersAgreeOnTrickyBodies(t *testing.T) {
	w := newWorld(t)
	gw := w.Gateway("adv-parse", "us-east-1", []string{w.Pod("h100").Listen})
	rt := w.Router("us-east-1", "")
	for _, tc := range trickyBodies {
		t.Run(tc.name, func(t *testing.T) {
			for _, tier := range []struct{ name, addr string }{{"gateway", gw.Listen}, {"router", rt.Listen}} {
				status, model, param := post(t, tier.addr, tc.body)
				if status != tc.status {
					t.Fatalf("%s answered %d, want %d", tier.name, status, tc.status)
				}
				if status == 200 && model != harness.TestModel {
					t.Errorf("%s served model %q, want %q", tier.name, model, harness.TestModel)
				}
				if status != 200 && param != tc.param {
					t.Errorf("%s's error names param %q, want %q", tier.name, param, tc.param)
				}
			}
		})
	}
}

// post sends a completion body and returns the status with the answer's model (200) or the
// error's param (otherwise); it fails the test when an error answer is not OpenAI-style JSON.
func post(t *testing.T, addr, body string) (status int, model, param string) {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		Model string `json:"model"`
		Error *struct {
			Message string  `json:"message"`
			Param   *string `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("answer %d is not JSON: %q", resp.StatusCode, b)
	}
	if resp.StatusCode != 200 {
		if out.Error == nil || out.Error.Message == "" {
			t.Fatalf("error answer %d has no OpenAI-style error: %q", resp.StatusCode, b)
		}
		if out.Error.Param != nil {
			param = *out.Error.Param
		}
	}
	return resp.StatusCode, out.Model, param
}
