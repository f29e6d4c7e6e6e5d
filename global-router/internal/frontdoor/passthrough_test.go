package frontdoor_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/openai"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
)

// routerPaths starts a us-east-1 front door over f that forwards the pass-through paths of list,
// with a body limit and an in-flight budget.
func routerPaths(t *testing.T, f *fleet, list string, limit int64, budget *body.Budget) string {
	t.Helper()
	tb := clustertable.New(clustertable.Config{Region: "us-east-1"}, f, nil)
	fwd, err := forward.New(forward.DefaultConfig(), tb)
	if err != nil {
		t.Fatal(err)
	}
	cfg := frontdoor.DefaultConfig()
	cfg.Region, cfg.QueueWait, cfg.MaxBodyBytes, cfg.Bodies = "us-east-1", 200*time.Millisecond, limit, budget
	if cfg.Passthrough, err = openai.ParsePassthroughPaths(list); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(frontdoor.New(cfg, tb, policies{}, fwd, nil, nil).Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// multipartBody builds a form of name, value pairs; "file" is a file part.
func multipartBody(t *testing.T, fields ...string) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		var err error
		if fields[i] == "file" {
			var fw io.Writer
			if fw, err = w.CreateFormFile("file", "a.wav"); err == nil {
				_, err = io.WriteString(fw, fields[i+1])
			}
		} else {
			err = w.WriteField(fields[i], fields[i+1])
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), w.FormDataContentType()
}

// hiddenReader hides a reader's type, so that the client sends it chunked with no length.
type hiddenReader struct{ io.Reader }

func TestPassthroughPaths(t *testing.T) {
	f := newFleet(t, clusterSpec{"east", "us-east-1", 0.1, 0})
	budget := body.NewBudget(512 << 10)
	url := routerPaths(t, f, "/tokenize=json,/v1/rerank=json,/v1/audio/transcriptions=multipart", 2<<20, budget)
	audio := strings.Repeat("PCM-", 250_000) // 1 MB: twice the budget, so it must stream
	tests := []struct {
		name, path string
		body       func() ([]byte, string)
		chunked    bool
		wantStatus int
		wantCode   string
		wantSent   bool // the gateway got the body as sent
	}{
		{name: "tokenize", path: "/tokenize", wantStatus: 200, wantSent: true,
			body: func() ([]byte, string) { return []byte(`{"model":"llama","prompt":"hello"}`), "application/json" }},
		{name: "rerank adapter", path: "/v1/rerank", wantStatus: 200, wantSent: true,
			body: func() ([]byte, string) {
				return []byte(`{"model":"sql-lora","query":"q","documents":["a","b"]}`), "application/json"
			}},
		{name: "path not enabled", path: "/v1/score", wantStatus: 404,
			body: func() ([]byte, string) { return []byte(`{"model":"llama"}`), "application/json" }},
		{name: "model no cluster serves", path: "/tokenize", wantStatus: 404, wantCode: "model_not_found",
			body: func() ([]byte, string) { return []byte(`{"model":"gpt-9","prompt":"x"}`), "application/json" }},
		{name: "ambiguous json model", path: "/tokenize", wantStatus: 400,
			body: func() ([]byte, string) { return []byte(`{"model":"llama","MODEL":"x"}`), "application/json" }},
		{name: "transcription", path: "/v1/audio/transcriptions", wantStatus: 200, wantSent: true,
			body: func() ([]byte, string) { return multipartBody(t, "model", "llama", "file", audio) }},
		{name: "transcription chunked, model last", path: "/v1/audio/transcriptions", chunked: true,
			wantStatus: 200, wantSent: true,
			body: func() ([]byte, string) { return multipartBody(t, "file", "short", "model", "llama") }},
		{name: "transcription duplicate model", path: "/v1/audio/transcriptions", wantStatus: 400,
			body: func() ([]byte, string) { return multipartBody(t, "model", "llama", "file", audio, "model", "x") }},
		{name: "transcription model no cluster serves", path: "/v1/audio/transcriptions", wantStatus: 404,
			wantCode: "model_not_found",
			body:     func() ([]byte, string) { return multipartBody(t, "model", "gpt-9", "file", "x") }},
		{name: "transcription oversized", path: "/v1/audio/transcriptions", chunked: true, wantStatus: 413,
			body: func() ([]byte, string) { return multipartBody(t, "model", "llama", "file", audio+audio+audio) }},
		{name: "transcription without model", path: "/v1/audio/transcriptions", wantStatus: 400,
			body: func() ([]byte, string) { return multipartBody(t, "file", "x") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, ctype := tt.body()
			var rd io.Reader = bytes.NewReader(data)
			if tt.chunked {
				rd = hiddenReader{rd}
			}
			empty := ""
			f.last.Store(&empty)
			resp, err := http.Post(url+tt.path, ctype, rd)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tt.wantStatus, raw)
			}
			sent := *f.last.Load() == tt.path+" "+string(data)
			if sent != tt.wantSent {
				t.Errorf("gateway got the whole body: %v, want %v", sent, tt.wantSent)
			}
			if tt.wantStatus == 200 {
				return
			}
			var eb struct {
				Error struct {
					Type string  `json:"type"`
					Code *string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(raw, &eb); err != nil || eb.Error.Type != "invalid_request_error" {
				t.Fatalf("error body %s is not an OpenAI-style error (%v)", raw, err)
			}
			if tt.wantCode != "" && (eb.Error.Code == nil || *eb.Error.Code != tt.wantCode) {
				t.Errorf("code %v, want %q", eb.Error.Code, tt.wantCode)
			}
		})
	}
	if budget.InUse() != 0 {
		t.Errorf("%d budget bytes held after the requests", budget.InUse())
	}
}
