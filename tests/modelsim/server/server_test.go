package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"

	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

// start runs a server on 127.0.0.1:0 and returns its base URL.
func start(t *testing.T, mutate func(*server.Config)) (string, *server.Server) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.Model = "llama"
	cfg.TimeScale = 0.02
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := server.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	<-s.Ready()
	return "http://" + s.Addr().String(), s
}

func post(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type response struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Text    string `json:"text"`
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		Delta struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

func TestNonStreaming(t *testing.T) {
	base, _ := start(t, nil)
	prompt := strings.Repeat("abcd", 100) // 100 tokens
	tests := []struct {
		name, path, body string
		wantObject       string
		wantPrompt       int
	}{
		{"completion", "/v1/completions",
			`{"model":"llama","prompt":"` + prompt + `","max_tokens":10,"temperature":0.7}`, "text_completion", 100},
		{"chat", "/v1/chat/completions",
			`{"model":"llama","messages":[{"role":"user","content":"` + prompt + `"}],"max_tokens":10}`,
			"chat.completion", (len("<|user|>\n"+prompt+"\n<|assistant|>\n") + 3) / 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, base+tt.path, tt.body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			var r response
			if err := json.Unmarshal(body, &r); err != nil {
				t.Fatal(err)
			}
			text := r.Choices[0].Text + r.Choices[0].Message.Content
			if r.Object != tt.wantObject || r.Model != "llama" || len(text) != 40 {
				t.Fatalf("object=%q model=%q text=%q", r.Object, r.Model, text)
			}
			if u := r.Usage; u.PromptTokens != tt.wantPrompt || u.CompletionTokens != 10 || u.TotalTokens != tt.wantPrompt+10 {
				t.Fatalf("usage %+v, want prompt %d and completion 10", u, tt.wantPrompt)
			}
			if f := r.Choices[0].FinishReason; f == nil || *f != "length" {
				t.Fatalf("finish_reason %v, want length", f)
			}
		})
	}
}

// readEvents reads an SSE stream into its data payloads.
func readEvents(t *testing.T, r io.Reader) []string {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("unexpected SSE line %q", line)
		}
		events = append(events, data)
	}
	return events
}

func TestStreaming(t *testing.T) {
	base, _ := start(t, nil)
	tests := []struct {
		name, path, body string
		wantUsage        bool
	}{
		{"completion", "/v1/completions", `{"model":"llama","prompt":"hello world","max_tokens":7,"stream":true}`, false},
		{
			"completion with usage",
			"/v1/completions",
			`{"model":"llama","prompt":"hello world","max_tokens":7,"stream":true,"stream_options":{"include_usage":true}}`,
			true,
		},
		{
			"chat with usage",
			"/v1/chat/completions",
			`{"model":"llama","messages":[{"role":"user","content":"hi"}],"max_tokens":7,"stream":true,"stream_options":{"include_usage":true}}`,
			true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(base+tt.path, "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
				t.Fatalf("status %d content type %q", resp.StatusCode, ct)
			}
			events := readEvents(t, resp.Body)
			checkStream(t, events, 7, tt.wantUsage)
		})
	}
}

func checkStream(t *testing.T, events []string, tokens int, wantUsage bool) {
	t.Helper()
	want := tokens + 1
	if wantUsage {
		want++
	}
	if len(events) != want || events[len(events)-1] != "[DONE]" {
		t.Fatalf("got %d events ending %q, want %d ending [DONE]", len(events), events[len(events)-1], want)
	}
	for i := range tokens {
		var r response
		if err := json.Unmarshal([]byte(events[i]), &r); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, events[i])
		}
		c := r.Choices[0]
		if c.Text+c.Delta.Content == "" {
			t.Fatalf("event %d carries no token: %s", i, events[i])
		}
		if last := i == tokens-1; last != (c.FinishReason != nil) {
			t.Fatalf("event %d finish_reason %v", i, c.FinishReason)
		}
	}
	if wantUsage {
		var r response
		if err := json.Unmarshal([]byte(events[tokens]), &r); err != nil || r.Usage == nil ||
			r.Usage.CompletionTokens != tokens || len(r.Choices) != 0 {
			t.Fatalf("usage event %s (%v)", events[tokens], err)
		}
	}
}

func TestCachedTokensReported(t *testing.T) {
	base, _ := start(t, nil)
	body := `{"model":"llama","prompt":"` + strings.Repeat("The same long prefix. ", 200) + `","max_tokens":2}`
	var cached []int
	for range 2 {
		resp, b := post(t, base+"/v1/completions", body)
		var r response
		if err := json.Unmarshal(b, &r); err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		cached = append(cached, r.Usage.PromptTokensDetails.CachedTokens)
	}
	if cached[0] != 0 || cached[1] < 1000 {
		t.Fatalf("cached tokens %v, want 0 then >= 1000", cached)
	}
}

func TestErrors(t *testing.T) {
	base, _ := start(t, func(c *server.Config) {
		c.MaxBodyBytes = 4096
		c.MaxModelLen = 1000
	})
	tests := []struct {
		name, body string
		status     int
		errType    string
	}{
		{"malformed JSON", `{"model":`, 400, "BadRequestError"},
		{"wrong type", `{"model":"llama","prompt":"x","max_tokens":"ten"}`, 400, "BadRequestError"},
		{"no prompt", `{"model":"llama"}`, 400, "BadRequestError"},
		{"zero max_tokens", `{"model":"llama","prompt":"x","max_tokens":0}`, 400, "BadRequestError"},
		{"unknown model", `{"model":"gpt-9","prompt":"x"}`, 404, "NotFoundError"},
		{
			"beyond max-model-len",
			`{"model":"llama","prompt":"` + strings.Repeat("a", 3000) + `","max_tokens":500}`,
			400,
			"BadRequestError",
		},
		{
			"body too large",
			`{"model":"llama","prompt":"` + strings.Repeat("a", 5000) + `"}`,
			413,
			"RequestEntityTooLargeError",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, base+"/v1/completions", tt.body)
			var e struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Param   any    `json:"param"`
					Code    int    `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("error body %q: %v", body, err)
			}
			if resp.StatusCode != tt.status || e.Error.Code != tt.status || e.Error.Type != tt.errType || e.Error.Message == "" {
				t.Fatalf("status %d body %s, want %d %s", resp.StatusCode, body, tt.status, tt.errType)
			}
		})
	}
	if resp, body := post(
		t,
		base+"/v1/completions",
		`{"model":"llama","prompt":"still serving","max_tokens":3}`,
	); resp.StatusCode != 200 {
		t.Fatalf("server stopped serving after errors: %d %s", resp.StatusCode, body)
	}
}

func TestModels(t *testing.T) {
	base, _ := start(t, func(c *server.Config) { c.LoRAs = []string{"sql", "chat"}; c.MaxLoras = 2 })
	resp, err := http.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string  `json:"id"`
			Object string  `json:"object"`
			Root   string  `json:"root"`
			Parent *string `json:"parent"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if list.Object != "list" || len(list.Data) != 3 {
		t.Fatalf("models %+v", list)
	}
	if d := list.Data[0]; d.ID != "llama" || d.Parent != nil || d.Root != "llama" || d.Object != "model" {
		t.Fatalf("base model card %+v", d)
	}
	for _, d := range list.Data[1:] {
		if d.Parent == nil || *d.Parent != "llama" || d.Root == "" {
			t.Fatalf("adapter card %+v, want parent llama and a root", d)
		}
	}
	if r, b := post(t, base+"/v1/completions", `{"model":"sql","prompt":"select","max_tokens":2}`); r.StatusCode != 200 {
		t.Fatalf("adapter request: %d %s", r.StatusCode, b)
	}
}

func TestHealth(t *testing.T) {
	base, _ := start(t, nil)
	for _, p := range []string{"/health", "/healthz", "/readyz"} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", p, resp.StatusCode)
		}
	}
}

func TestShutdownDrainsStreams(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Listen, cfg.Model, cfg.TimeScale = "127.0.0.1:0", "llama", 0.1
	s, err := server.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	<-s.Ready()
	// 100 tokens × 8 ms × 0.1 = about 80 ms of streaming; shutdown starts in the middle.
	resp, err := http.Post("http://"+s.Addr().String()+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"llama","prompt":"drain me","max_tokens":100,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil { // first token arrived
		t.Fatal(err)
	}
	cancel()
	events := readEvents(t, br)
	if len(events) != 100 || events[len(events)-1] != "[DONE]" { // 99 more tokens and [DONE]
		t.Fatalf("stream cut at shutdown: %d more events", len(events))
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop")
	}
}

func TestClientDisconnectCancels(t *testing.T) {
	base, s := start(t, nil)
	resp, err := http.Post(base+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"llama","prompt":"long answer","max_tokens":5000,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	poll.UntilState(t, 10*time.Second, func() (bool, string) {
		snap := s.Snapshot()
		return snap.Running == 0 && snap.Stats.Cancelled == 1 && snap.UsedBlocks == 0,
			fmt.Sprintf("running=%d cancelled=%d used blocks=%d", snap.Running, snap.Stats.Cancelled, snap.UsedBlocks)
	}, "the request cancelled after the disconnect")
}

func TestEmbeddings(t *testing.T) {
	base, _ := start(t, nil)
	tests := []struct {
		name, body string
		status     int
	}{
		{"string input", `{"model":"llama","input":"embed this text"}`, 200},
		{"unknown model", `{"model":"other","input":"x"}`, 404},
		{"no input", `{"model":"llama"}`, 400},
		{"malformed", `{"model":`, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, base+"/v1/embeddings", tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if tt.status != 200 {
				return
			}
			var r struct {
				Data []struct {
					Embedding []float64 `json:"embedding"`
				} `json:"data"`
				Usage usage `json:"usage"`
			}
			if err := json.Unmarshal(body, &r); err != nil || len(r.Data) != 1 || len(r.Data[0].Embedding) == 0 ||
				r.Usage.PromptTokens != 4 {
				t.Fatalf("embedding response %s (%v)", body, err)
			}
			var norm float64
			for _, x := range r.Data[0].Embedding {
				norm += x * x
			}
			if norm < 0.99 || norm > 1.01 {
				t.Fatalf("embedding norm² %v, want 1", norm)
			}
		})
	}
}
