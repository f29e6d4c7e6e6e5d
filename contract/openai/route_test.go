package openai

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestNoRoute(t *testing.T) {
	mux := http.NewServeMux()
	for _, p := range InferencePaths {
		mux.HandleFunc("POST "+p, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("inference")) })
	}
	mux.HandleFunc("GET "+PathModels, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("models")) })
	var observed []int
	h := NoRoute(mux, func(_ *http.Request, status int) { observed = append(observed, status) })

	tests := []struct {
		name, method, path string
		status             int
		body, allow        string // body: the served body, or the error message's start
	}{
		{"responses", http.MethodPost, PathResponses, 200, "inference", ""},
		{"models", http.MethodGet, PathModels, 200, "models", ""},
		{"unknown path", http.MethodPost, "/v1/nope", 404, "Invalid URL (POST /v1/nope)", ""},
		{"unknown root", http.MethodGet, "/", 404, "Invalid URL (GET /)", ""},
		{
			"responses by id (not routed)",
			http.MethodGet,
			"/v1/responses/resp_1",
			404,
			"Invalid URL (GET /v1/responses/resp_1)",
			"",
		},
		{"wrong method", http.MethodDelete, PathResponses, 405, "Method DELETE is not allowed on /v1/responses", "POST"},
		{"wrong method on models", http.MethodPost, PathModels, 405, "Method POST is not allowed on /v1/models", "GET, HEAD"},
		{
			"long path is cut",
			http.MethodGet,
			"/" + strings.Repeat("a", 5000),
			404,
			"Invalid URL (GET /" + strings.Repeat("a", 255) + "...)",
			"",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			observed = nil
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(tt.method, tt.path, nil))
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d (%s)", w.Code, tt.status, w.Body)
			}
			if tt.status == 200 {
				if w.Body.String() != tt.body || observed != nil {
					t.Fatalf("body %q (observed %v), want %q served", w.Body, observed, tt.body)
				}
				return
			}
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("body %q (%s) is not a JSON error: %v", w.Body, w.Header().Get("Content-Type"), err)
			}
			if !strings.HasPrefix(e.Error.Message, tt.body) || e.Error.Type != TypeInvalidRequest || e.Error.Code != nil {
				t.Fatalf("error %+v, want message %q, type %s, null code", e.Error, tt.body, TypeInvalidRequest)
			}
			if got := w.Header().Get("Allow"); got != tt.allow {
				t.Fatalf("Allow %q, want %q", got, tt.allow)
			}
			if len(observed) != 1 || observed[0] != tt.status {
				t.Fatalf("observed %v, want [%d]", observed, tt.status)
			}
		})
	}
}
