package server_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

// responseObject is what the tests read of a Responses API response.
type responseObject struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Status            string `json:"status"`
	Model             string `json:"model"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage *struct {
		InputTokens        int `json:"input_tokens"`
		OutputTokens       int `json:"output_tokens"`
		TotalTokens        int `json:"total_tokens"`
		InputTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
	} `json:"usage"`
}

func (r responseObject) text() string {
	var b strings.Builder
	for _, o := range r.Output {
		for _, c := range o.Content {
			if c.Type == "output_text" {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}

func TestResponses(t *testing.T) {
	url, _ := start(t, nil)
	tests := []struct {
		name, body string
		status     string
		tokens     int // 0: a natural length
	}{
		{"string input", `{"model":"llama","input":"hello there","max_output_tokens":5}`, "incomplete", 5},
		{"messages and instructions", `{"model":"llama","instructions":"be brief","input":[{"role":"user","content":"hi"},` +
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]},` +
			`{"role":"user","content":[{"type":"input_text","text":"again"}]}]}`, "completed", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := post(t, url+"/v1/responses", tt.body)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
			var r responseObject
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if r.Object != "response" || !strings.HasPrefix(r.ID, "resp_") || r.Status != tt.status || r.Model != "llama" ||
				len(r.Output) != 1 || r.Output[0].Type != "message" || r.Output[0].Role != "assistant" || r.text() == "" {
				t.Fatalf("response %s", b)
			}
			if (tt.status == "incomplete") != (r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "max_output_tokens") {
				t.Fatalf("incomplete details %+v with status %s", r.IncompleteDetails, r.Status)
			}
			u := r.Usage
			if u == nil || u.InputTokens <= 0 || u.OutputTokens <= 0 || u.TotalTokens != u.InputTokens+u.OutputTokens ||
				u.InputTokensDetails == nil || (tt.tokens > 0 && u.OutputTokens != tt.tokens) {
				t.Fatalf("usage %s", b)
			}
			if got := len(r.text()) / 4; got != u.OutputTokens { // four characters a token
				t.Fatalf("%d tokens of text, usage says %d", got, u.OutputTokens)
			}
		})
	}
}

// TestResponsesStreaming checks the typed events: lifecycle events first, one delta per token,
// then the done events and response.completed with the usage; no [DONE].
func TestResponsesStreaming(t *testing.T) {
	url, _ := start(t, nil)
	resp, err := http.Post(url+"/v1/responses", "application/json",
		strings.NewReader(`{"model":"llama","input":"hello there","max_output_tokens":6,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	var names []string
	var text strings.Builder
	var final responseObject
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var ev struct {
				Type     string         `json:"type"`
				Seq      int            `json:"sequence_number"`
				Delta    string         `json:"delta"`
				Response responseObject `json:"response"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
				t.Fatalf("event %q: %v", line, err)
			}
			if ev.Type != name || ev.Seq != len(names) {
				t.Fatalf("event %q named %q, number %d, want %d", ev.Type, name, ev.Seq, len(names))
			}
			names = append(names, ev.Type)
			text.WriteString(ev.Delta)
			if ev.Type == "response.completed" {
				final = ev.Response
			}
		}
	}
	want := []string{
		"response.created",
		"response.in_progress",
		"response.output_item.added",
		"response.content_part.added",
	}
	for range 6 {
		want = append(want, "response.output_text.delta")
	}
	want = append(
		want,
		"response.output_text.done",
		"response.content_part.done",
		"response.output_item.done",
		"response.completed",
	)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("events %v, want %v", names, want)
	}
	if final.text() != text.String() || final.Usage == nil || final.Usage.OutputTokens != 6 ||
		final.Usage.InputTokens == 0 ||
		final.Status != "incomplete" {
		t.Fatalf("completed response %+v; deltas %q", final, text.String())
	}
}

func TestResponsesErrors(t *testing.T) {
	url, _ := start(t, func(c *server.Config) { c.ReportCachedTokens = false })
	tests := []struct{ name, body, param string }{
		{"no input", `{"model":"llama"}`, "input"},
		{"empty input array", `{"model":"llama","input":[]}`, "input"},
		{
			"unsupported item",
			`{"model":"llama","input":[{"type":"function_call_output","call_id":"c","output":"x"}]}`,
			"input",
		},
		{"message without role", `{"model":"llama","input":[{"content":"x"}]}`, "input"},
		{"bad max_output_tokens", `{"model":"llama","input":"x","max_output_tokens":0}`, "max_output_tokens"},
		{"previous response", `{"model":"llama","input":"x","previous_response_id":"resp_1"}`, "previous_response_id"},
		{"no model", `{"input":"x"}`, "model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := post(t, url+"/v1/responses", tt.body)
			var e struct {
				Error struct{ Param string } `json:"error"`
			}
			if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &e) != nil || e.Error.Param != tt.param {
				t.Fatalf("status %d: %s; want 400 naming %s", resp.StatusCode, b, tt.param)
			}
		})
	}
	// Without cached-token reporting the details are null, as prompt_tokens_details are.
	_, b := post(t, url+"/v1/responses", `{"model":"llama","input":"x","max_output_tokens":2}`)
	var r responseObject
	if err := json.Unmarshal(b, &r); err != nil || r.Usage == nil || r.Usage.InputTokensDetails != nil {
		t.Fatalf("usage %s, want null input_tokens_details", b)
	}
}
