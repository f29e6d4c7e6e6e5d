package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

func TestEnginePaths(t *testing.T) {
	url, _ := start(t, nil)
	tests := []struct {
		name, path, body string
		wantStatus       int
		check            func(t *testing.T, out map[string]any)
	}{
		{"detokenize", "/detokenize", `{"model":"llama","tokens":[1,2,3]}`, 200, func(t *testing.T, out map[string]any) {
			if p, _ := out["prompt"].(string); p == "" {
				t.Errorf("no prompt in %v", out)
			}
		}},
		{"rerank", "/v1/rerank", `{"model":"llama","query":"q","documents":["a","b","c"],"top_n":2}`, 200,
			func(t *testing.T, out map[string]any) {
				res, _ := out["results"].([]any)
				if len(res) != 2 {
					t.Fatalf("results %v, want the top 2", out["results"])
				}
				a := res[0].(map[string]any)["relevance_score"].(float64)
				b := res[1].(map[string]any)["relevance_score"].(float64)
				if a < b || a > 1 || b < 0 {
					t.Errorf("scores %v, %v: want descending in [0,1]", a, b)
				}
			}},
		{"rerank v2", "/v2/rerank", `{"model":"llama","query":"q","documents":["a"]}`, 200, nil},
		{"score", "/score", `{"model":"llama","text_1":"a","text_2":["b","c"]}`, 200,
			func(t *testing.T, out map[string]any) {
				if d, _ := out["data"].([]any); len(d) != 2 {
					t.Errorf("data %v, want two scores", out["data"])
				}
			}},
		{"score mismatched", "/v1/score", `{"model":"llama","text_1":["a","b"],"text_2":["c","d","e"]}`, 400, nil},
		{"pooling", "/pooling", `{"model":"llama","input":["a","b"]}`, 200, func(t *testing.T, out map[string]any) {
			if d, _ := out["data"].([]any); len(d) != 2 {
				t.Errorf("data %v, want two vectors", out["data"])
			}
		}},
		{"classify", "/classify", `{"model":"llama","input":"great"}`, 200, func(t *testing.T, out map[string]any) {
			d, _ := out["data"].([]any)
			if len(d) != 1 || d[0].(map[string]any)["label"] == "" {
				t.Errorf("data %v, want one label", out["data"])
			}
		}},
		{"unknown model", "/v1/rerank", `{"model":"other","query":"q","documents":["a"]}`, 404, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, url+tt.path, tt.body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, body)
			}
			var out map[string]any
			if err := json.Unmarshal(body, &out); err != nil {
				t.Fatalf("answer %s: %v", body, err)
			}
			if tt.check != nil {
				tt.check(t, out)
			}
		})
	}
}

func TestTranscriptions(t *testing.T) {
	url, _ := start(t, nil)
	send := func(t *testing.T, path string, fields ...string) (int, string) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		for i := 0; i+1 < len(fields); i += 2 {
			if fields[i] == "file" {
				fw, _ := w.CreateFormFile("file", "a.wav")
				_, _ = io.WriteString(fw, fields[i+1])
			} else {
				_ = w.WriteField(fields[i], fields[i+1])
			}
		}
		_ = w.Close()
		resp, err := http.Post(url+path, w.FormDataContentType(), &b)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	audio := strings.Repeat("x", 160_000) // about 10 words
	status, out := send(t, "/v1/audio/transcriptions", "model", "llama", "file", audio)
	var got struct{ Text string }
	if status != 200 || json.Unmarshal([]byte(out), &got) != nil || len(strings.Fields(got.Text)) < 2 {
		t.Fatalf("transcription: %d %s", status, out)
	}
	if status, again := send(
		t,
		"/v1/audio/transcriptions",
		"file",
		audio,
		"model",
		"llama",
	); status != 200 ||
		again != out {
		t.Errorf("the same audio gave %q, then %q", out, again)
	}
	if status, text := send(t, "/v1/audio/translations", "model", "llama", "file", audio,
		"response_format", "text"); status != 200 || strings.HasPrefix(text, "{") {
		t.Errorf("text translation: %d %s", status, text)
	}
	if status, _ := send(t, "/v1/audio/transcriptions", "model", "other", "file", audio); status != 404 {
		t.Errorf("unknown model: %d, want 404", status)
	}
	if status, _ := send(t, "/v1/audio/transcriptions", "model", "llama"); status != 400 {
		t.Errorf("no file: %d, want 400", status)
	}
}
