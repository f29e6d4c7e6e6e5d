package proxy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/openai"
	"github.com/switchyard-dev/switchyard/contract/poll"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/proxy"
)

// engine is a model server for pass-through paths: it records what each request brought (path,
// body length, the multipart model field and file size) and answers 200 with JSON.
type engine struct {
	mu   sync.Mutex
	seen []engineCall
}

type engineCall struct {
	path, model string
	bodyBytes   int
	fileBytes   int
	err         error
}

func (e *engine) handler(w http.ResponseWriter, r *http.Request) {
	c := engineCall{path: r.URL.Path}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		mr, err := r.MultipartReader()
		for err == nil {
			var p *multipart.Part
			if p, err = mr.NextPart(); err != nil {
				break
			}
			b, rerr := io.ReadAll(p)
			if rerr != nil {
				err = rerr
				break
			}
			switch p.FormName() {
			case "model":
				c.model = string(b)
			case "file":
				c.fileBytes = len(b)
			}
		}
		if err != io.EOF {
			c.err = err
		}
	} else {
		b, err := io.ReadAll(r.Body)
		c.bodyBytes, c.err = len(b), err
	}
	e.mu.Lock()
	e.seen = append(e.seen, c)
	e.mu.Unlock()
	if c.err != nil {
		http.Error(w, c.err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"text":"ok","model":%q}`, c.model)
}

func (e *engine) calls() []engineCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]engineCall(nil), e.seen...)
}

// form builds a multipart body: fields in order, "file" holding fileBytes bytes.
func form(t *testing.T, fields ...string) (*bytes.Buffer, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		var err error
		if fields[i] == "file" {
			var fw io.Writer
			if fw, err = w.CreateFormFile("file", "audio.wav"); err == nil {
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
	return &b, w.FormDataContentType()
}

// onlyReader hides a reader's type, so that the client sends it chunked with no length.
type onlyReader struct{ io.Reader }

func TestPassthroughPaths(t *testing.T) {
	eng := &engine{}
	up := upstream(t, eng.handler)
	// This pool enables two engine paths only.
	paths, err := openai.ParsePassthroughPaths("/tokenize=json,/v1/audio/transcriptions=multipart")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, envOptions{maxBody: 1 << 20, mutate: func(c *proxy.Config) { c.Passthrough = paths }}, up)
	audio := strings.Repeat("PCM-", 100_000) // 400 KB
	tests := []struct {
		name, method, path string
		body               func() (io.Reader, string)
		wantStatus         int
		wantCode           string // the error body's code, or "" for a null code
		wantModel          string // the multipart model the engine read
		wantEngine         bool   // the engine was called and read a whole body
	}{
		{name: "json path", method: "POST", path: "/tokenize",
			body: func() (io.Reader, string) {
				return strings.NewReader(`{"model":"llama","prompt":"hi"}`), "application/json"
			},
			wantStatus: 200, wantEngine: true},
		{name: "adapter", method: "POST", path: "/tokenize",
			body: func() (io.Reader, string) {
				return strings.NewReader(`{"model":"lora-a","prompt":"hi"}`), "application/json"
			},
			wantStatus: 200, wantEngine: true},
		{name: "path not enabled for the pool", method: "POST", path: "/v1/rerank",
			body:       func() (io.Reader, string) { return strings.NewReader(`{"model":"llama"}`), "application/json" },
			wantStatus: 404},
		{name: "unknown path", method: "POST", path: "/v1/nope",
			body:       func() (io.Reader, string) { return strings.NewReader(`{"model":"llama"}`), "application/json" },
			wantStatus: 404},
		{name: "GET on a pass-through path", method: "GET", path: "/tokenize", wantStatus: 405},
		{name: "model not served", method: "POST", path: "/tokenize",
			body:       func() (io.Reader, string) { return strings.NewReader(`{"model":"gpt-9"}`), "application/json" },
			wantStatus: 404, wantCode: "model_not_found"},
		{name: "ambiguous json model", method: "POST", path: "/tokenize",
			body: func() (io.Reader, string) {
				return strings.NewReader(`{"model":"llama","Model":"x"}`), "application/json"
			},
			wantStatus: 400, wantCode: "invalid_request"},
		{name: "multipart model first", method: "POST", path: "/v1/audio/transcriptions",
			body:       func() (io.Reader, string) { return form(t, "model", "llama", "file", audio) },
			wantStatus: 200, wantModel: "llama", wantEngine: true},
		{name: "multipart model after the file, chunked", method: "POST", path: "/v1/audio/transcriptions",
			body: func() (io.Reader, string) {
				b, ct := form(t, "file", audio, "model", "llama", "language", "en")
				return onlyReader{b}, ct
			},
			wantStatus: 200, wantModel: "llama", wantEngine: true},
		{name: "multipart duplicate model", method: "POST", path: "/v1/audio/transcriptions",
			body:       func() (io.Reader, string) { return form(t, "model", "llama", "file", audio, "model", "other") },
			wantStatus: 400, wantCode: "invalid_request"},
		{name: "multipart without model", method: "POST", path: "/v1/audio/transcriptions",
			body:       func() (io.Reader, string) { return form(t, "file", "abc") },
			wantStatus: 400, wantCode: "invalid_request"},
		{name: "multipart model not served", method: "POST", path: "/v1/audio/transcriptions",
			body:       func() (io.Reader, string) { return form(t, "model", "gpt-9", "file", "abc") },
			wantStatus: 404, wantCode: "model_not_found"},
		{name: "multipart oversized, declared", method: "POST", path: "/v1/audio/transcriptions",
			body:       func() (io.Reader, string) { return form(t, "model", "llama", "file", audio+audio+audio) },
			wantStatus: 413, wantCode: "request_too_large"},
		{name: "multipart oversized, chunked", method: "POST", path: "/v1/audio/transcriptions",
			body: func() (io.Reader, string) {
				b, ct := form(t, "model", "llama", "file", audio+audio+audio)
				return onlyReader{b}, ct
			},
			wantStatus: 413, wantCode: "request_too_large"},
		{name: "json body on a multipart path", method: "POST", path: "/v1/audio/transcriptions",
			body:       func() (io.Reader, string) { return strings.NewReader(`{"model":"llama"}`), "application/json" },
			wantStatus: 400, wantCode: "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(eng.calls())
			var rd io.Reader
			ctype := ""
			if tt.body != nil {
				rd, ctype = tt.body()
			}
			req, err := http.NewRequest(tt.method, e.url+tt.path, rd)
			if err != nil {
				t.Fatal(err)
			}
			if ctype != "" {
				req.Header.Set("Content-Type", ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, raw)
			}
			calls := eng.calls()[before:]
			if tt.wantStatus != 200 {
				var eb struct {
					Error struct {
						Type string  `json:"type"`
						Code *string `json:"code"`
					} `json:"error"`
				}
				if err := json.Unmarshal(raw, &eb); err != nil || eb.Error.Type != "invalid_request_error" {
					t.Fatalf("error body %s is not an OpenAI-style error (%v)", raw, err)
				}
				if got := ""; eb.Error.Code != nil {
					got = *eb.Error.Code
					if got != tt.wantCode {
						t.Errorf("code %q, want %q", got, tt.wantCode)
					}
				} else if tt.wantCode != "" {
					t.Errorf("null code, want %q", tt.wantCode)
				}
				for _, c := range calls {
					if c.err == nil {
						t.Errorf("the engine read a whole body for a refused request: %+v", c)
					}
				}
				return
			}
			if len(calls) != 1 || calls[0].path != tt.path || calls[0].err != nil {
				t.Fatalf("engine calls %+v, want one whole request on %s", calls, tt.path)
			}
			if tt.wantModel != "" && (calls[0].model != tt.wantModel || calls[0].fileBytes != len(audio)) {
				t.Errorf("engine read model %q and %d file bytes, want %q and %d", calls[0].model,
					calls[0].fileBytes, tt.wantModel, len(audio))
			}
		})
	}
	// Pass-through requests are scheduled on the model alone: no prefix hashes, no body.
	e.sched.mu.Lock()
	defer e.sched.mu.Unlock()
	for _, req := range e.sched.seen {
		if len(req.PrefixHashes) > 0 || req.Body != nil || req.PromptTokens != 0 {
			t.Errorf("request %s for %s scheduled with %d prefix hashes, %d body bytes, %d prompt tokens",
				req.ID, req.Model, len(req.PrefixHashes), len(req.Body), req.PromptTokens)
		}
	}
}

// TestPassthroughFormStreams: a multipart body far larger than the in-flight body budget goes
// through whole, so the gateway held only its head; an oversized one is cut at the limit.
func TestPassthroughFormStreams(t *testing.T) {
	eng := &engine{}
	up := upstream(t, eng.handler)
	budget := body.NewBudget(256 << 10)
	e := newEnvWith(t, envOptions{maxBody: 8 << 20, budget: budget}, up)
	audio := strings.Repeat("PCM-", 1<<20) // 4 MiB, 16 times the budget
	b, ct := form(t, "model", "llama", "file", audio)
	resp := post(t, e.url+"/v1/audio/transcriptions", b.String(), map[string]string{"Content-Type": ct})
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	if c := eng.calls(); len(c) != 1 || c[0].fileBytes != len(audio) {
		t.Fatalf("engine calls %+v, want the whole %d-byte file", c, len(audio))
	}
	// The handler gives its head back once it returns, just after the answer.
	poll.Until(t, waitTimeout, func() bool { return budget.InUse() == 0 }, "the head's budget given back")
}
