package server

import (
	"errors"
	"net/http"
	"testing"
)

func TestParseRequest(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		chat      bool
		wantErr   bool
		wantTok   int
		wantMax   int
		wantUsage bool
	}{
		{"string prompt", `{"model":"m","prompt":"abcdefgh","max_tokens":3}`, false, false, 2, 3, false},
		{"list of one prompt", `{"model":"m","prompt":["abcd"]}`, false, false, 1, 0, false},
		{"token ids", `{"model":"m","prompt":[1,2,3,4,5]}`, false, false, 5, 0, false},
		{"two prompts", `{"model":"m","prompt":["a","b"]}`, false, true, 0, 0, false},
		{
			"usage option",
			`{"model":"m","prompt":"x","stream":true,"stream_options":{"include_usage":true}}`,
			false,
			false,
			1,
			0,
			true,
		},
		{
			"chat parts",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_completion_tokens":4}`,
			true,
			false,
			len("<|user|>\nhi\n<|assistant|>\n")/4 + 1,
			4,
			false,
		},
		{"chat no messages", `{"model":"m","messages":[]}`, true, true, 0, 0, false},
		{"chat bad content", `{"model":"m","messages":[{"role":"user","content":7}]}`, true, true, 0, 0, false},
		{"missing model", `{"prompt":"x"}`, false, true, 0, 0, false},
		{"n=2", `{"model":"m","prompt":"x","n":2}`, false, true, 0, 0, false},
		{"negative max", `{"model":"m","prompt":"x","max_tokens":-1}`, false, true, 0, 0, false},
		{"not an object", `[1,2]`, false, true, 0, 0, false},
		{"empty prompt", `{"model":"m","prompt":""}`, false, true, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := parseRequest([]byte(tt.body), tt.chat)
			if tt.wantErr {
				var ae *apiError
				if !errors.As(err, &ae) || ae.status != 400 {
					t.Fatalf("err = %v, want a 400 apiError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.promptTokens != tt.wantTok || r.maxTokens != tt.wantMax || r.includeUsage != tt.wantUsage {
				t.Fatalf("got %+v", r)
			}
		})
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","prompt":"hello","max_tokens":3,"stream":true}`), false)
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`), true)
	f.Add([]byte(`{"model":"m","prompt":[1,2,3]}`), false)
	f.Add([]byte(`{"model":"m","messages":[{"role":"u","content":[{"type":"text","text":"x"}]}]}`), true)
	f.Add([]byte(`{`), false)
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		r, err := parseRequest(body, chat)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != 400 || ae.message == "" {
				t.Fatalf("error %v is not a 400 apiError with a message", err)
			}
			return
		}
		if r.model == "" || r.promptTokens < 1 || r.maxTokens < 0 {
			t.Fatalf("accepted an unusable request: %+v", r)
		}
	})
}

// TestPrefillPeer: modelsim reads the prefill pod as llm-d's sidecar does, from
// x-prefiller-host-port, else from its later spelling x-llm-d-prefiller-host-port.
func TestPrefillPeer(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.Header
		want string
	}{
		{"none", http.Header{}, ""},
		{"legacy", http.Header{"X-Prefiller-Host-Port": {"a:1"}}, "a:1"},
		{"canonical", http.Header{"X-Llm-D-Prefiller-Host-Port": {"b:2"}}, "b:2"},
		{"both: legacy wins", http.Header{"X-Prefiller-Host-Port": {"a:1"}, "X-Llm-D-Prefiller-Host-Port": {"b:2"}}, "a:1"},
	} {
		if got := prefillPeer(tc.h); got != tc.want {
			t.Errorf("%s: prefillPeer = %q, want %q", tc.name, got, tc.want)
		}
	}
}
