package server_test

import (
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
	"github.com/switchyard-dev/switchyard/tests/modelsim/textgen"
)

func TestEngineRequest(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Model, cfg.LoRAs, cfg.MaxModelLen = "base", []string{"sql"}, 1000
	chatText := textgen.RenderChat([]textgen.Message{{Role: "system", Content: "You help."},
		{Role: "user", Content: "Hello there"}})
	tests := []struct {
		name        string
		body        string
		chat        bool
		wantErr     string // substring of the error, "" for none
		wantAdapter string
		wantPrompt  string
		wantMax     int
		wantReason  string
	}{
		{name: "completions", body: `{"model":"base","prompt":"abcdefgh","max_tokens":7}`,
			wantPrompt: "abcdefgh", wantMax: 7, wantReason: "length"},
		{
			name:       "chat rendered",
			chat:       true,
			wantPrompt: chatText,
			wantMax:    5,
			wantReason: "length",
			body:       `{"model":"base","max_tokens":5,"messages":[{"role":"system","content":"You help."},{"role":"user","content":"Hello there"}]}`,
		},
		{name: "adapter", body: `{"model":"sql","prompt":"abcd","max_tokens":2}`,
			wantAdapter: "sql", wantPrompt: "abcd", wantMax: 2, wantReason: "length"},
		{name: "ignore_eos takes the default bound", body: `{"model":"base","prompt":"abcd","ignore_eos":true}`,
			wantPrompt: "abcd", wantMax: 256, wantReason: "length"},
		{name: "unknown model", body: `{"model":"other","prompt":"abcd"}`, wantErr: "other"},
		{name: "beyond context", body: `{"model":"base","prompt":"abcd","max_tokens":1000}`, wantErr: "context length"},
		{name: "malformed", body: `{"model":`, wantErr: "Invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := cfg.EngineRequest([]byte(tt.body), tt.chat)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Adapter != tt.wantAdapter || string(r.Prompt) != tt.wantPrompt || r.MaxTokens != tt.wantMax ||
				r.FinishReason != tt.wantReason || r.PromptTokens != textgen.CountTokens(tt.wantPrompt) {
				t.Fatalf("request %+v (prompt %q), want adapter %q prompt %q max %d reason %s",
					r, r.Prompt, tt.wantAdapter, tt.wantPrompt, tt.wantMax, tt.wantReason)
			}
		})
	}
}
