package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/modelsim/physics"
	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

// rawUsage decodes usage keeping prompt_tokens_details as raw JSON, to tell null from an object.
type rawUsage struct {
	Usage *struct {
		PromptTokens        int             `json:"prompt_tokens"`
		PromptTokensDetails json.RawMessage `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// TestReportCachedTokens: with ReportCachedTokens off, every usage object (JSON answer, stream
// usage chunk, embeddings) carries prompt_tokens_details null, as vLLM does without
// --enable-prompt-tokens-details; on, it carries cached_tokens.
func TestReportCachedTokens(t *testing.T) {
	prompt := strings.Repeat("The same long prefix. ", 100)
	requests := []struct {
		name, path, body string
		stream           bool
	}{
		{"completion", "/v1/completions", `{"model":"llama","prompt":"` + prompt + `","max_tokens":2}`, false},
		{"stream usage", "/v1/chat/completions", `{"model":"llama","messages":[{"role":"user","content":"` + prompt +
			`"}],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`, true},
		{"embeddings", "/v1/embeddings", `{"model":"llama","input":"` + prompt + `"}`, false},
	}
	for _, report := range []bool{true, false} {
		base, _ := start(t, func(c *server.Config) { c.ReportCachedTokens = report })
		for _, rq := range requests {
			t.Run(rq.name+map[bool]string{true: " reported", false: " not reported"}[report], func(t *testing.T) {
				resp, b := post(t, base+rq.path, rq.body)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d: %s", resp.StatusCode, b)
				}
				body := string(b)
				if rq.stream {
					events := readEvents(t, strings.NewReader(body))
					body = events[len(events)-2] // the usage chunk before [DONE]
				}
				var u rawUsage
				if err := json.Unmarshal([]byte(body), &u); err != nil || u.Usage == nil || u.Usage.PromptTokens == 0 {
					t.Fatalf("usage missing (%v): %s", err, body)
				}
				details := string(u.Usage.PromptTokensDetails)
				if report && !strings.Contains(details, `"cached_tokens":`) {
					t.Fatalf("prompt_tokens_details %s, want cached_tokens", details)
				}
				if !report && details != "null" {
					t.Fatalf("prompt_tokens_details %s, want null", details)
				}
			})
		}
	}
}

// TestVLLMPhaseMetrics: the per-request phase histograms and the tokens-per-step histogram are
// exported with vLLM's names and count finished requests and steps.
func TestVLLMPhaseMetrics(t *testing.T) {
	base, _ := start(t, func(c *server.Config) { c.Physics = string(physics.Attention) })
	for range 3 {
		if r, b := post(
			t,
			base+"/v1/completions",
			`{"model":"llama","prompt":"hello there","max_tokens":4}`,
		); r.StatusCode != 200 {
			t.Fatalf("%d %s", r.StatusCode, b)
		}
	}
	got := scrape(t, base)
	for _, n := range []string{"vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds",
		"vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds", "vllm:request_inference_time_seconds"} {
		if got[n] != 3 {
			t.Errorf("%s counts %v requests, want 3", n, got[n])
		}
	}
	if got["vllm:iteration_tokens_total"] < 4 {
		t.Errorf("vllm:iteration_tokens_total counts %v steps, want >= 4", got["vllm:iteration_tokens_total"])
	}
}

func TestEngineConfigPhysics(t *testing.T) {
	tests := []struct {
		name    string
		physics string
		jitter  float64
		want    physics.Family
		ok      bool
	}{
		{"default linear", "linear", physics.FamilyDefaultJitter, physics.Linear, true},
		{"attention", "Attention", 0.1, physics.Attention, true},
		{"blis no jitter", "blis", 0, physics.BLIS, true},
		{"unknown family", "cubic", 0, "", false},
		{"bad jitter", "blis", 3, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := server.DefaultConfig()
			c.Physics, c.PhysicsJitter = tt.physics, tt.jitter
			if err := c.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
			if !tt.ok {
				if _, err := server.New(c, nil, nil); err == nil {
					t.Fatal("New accepted an invalid physics")
				}
				return
			}
			ecfg, err := c.EngineConfig()
			if err != nil {
				t.Fatal(err)
			}
			if ecfg.Physics.Family != tt.want || ecfg.Physics.Jitter != tt.jitter || ecfg.Profile.Name != "h100" {
				t.Fatalf("engine config physics %+v profile %s", ecfg.Physics, ecfg.Profile.Name)
			}
		})
	}
}
