package frontdoor

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/contract/usagemeter"
)

// TestUsageMeterStrips feeds streams to a stripping meter split at every byte: the client
// receives every event but the usage-only chunk, byte for byte, and the usage is read.
func TestUsageMeterStrips(t *testing.T) {
	const (
		tok   = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n"
		usage = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n"
		done  = "data: [DONE]\n\n"
	)
	big := "data: {\"choices\":[{\"delta\":{\"content\":\"" + strings.Repeat("x", usagemeter.MaxBuffered) + "\"}}]}\n\n"
	tests := []struct {
		name, in, want string
		tokens         int64
	}{
		{"usage chunk dropped", tok + tok + usage + done, tok + tok + done, 7},
		{"CRLF lines", strings.ReplaceAll(tok+usage+done, "\n", "\r\n"), strings.ReplaceAll(tok+done, "\n", "\r\n"), 7},
		{
			"comment and event lines kept",
			": ping\n\n" + "event: x\n" + tok + usage + done,
			": ping\n\nevent: x\n" + tok + done,
			7,
		},
		{"usage with choices kept", tok + strings.Replace(usage, `"choices":[]`, `"choices":[{"index":0}]`, 1) + done,
			tok + strings.Replace(usage, `"choices":[]`, `"choices":[{"index":0}]`, 1) + done, 7},
		{"usage chunk last, no blank line", tok + strings.TrimSuffix(usage, "\n\n"), tok, 7},
		{"unterminated event kept", tok + "data: {\"partial\"", tok + "data: {\"partial\"", 0},
		{"oversized event passed through", tok + big + usage + done, tok + big + done, 7},
		{
			"error event kept",
			tok + "data: {\"error\":{\"message\":\"broke\"}}\n\n",
			tok + "data: {\"error\":{\"message\":\"broke\"}}\n\n",
			0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps := []int{1, 2, 3, 7, 64, len(tt.in)}
			if len(tt.in) > 1<<16 {
				steps = []int{4096, len(tt.in)}
			}
			for _, step := range steps {
				rec := httptest.NewRecorder()
				rec.Header().Set("Content-Type", "text/event-stream")
				m := newUsageMeter(rec, nil, true)
				for in := tt.in; len(in) > 0; {
					n := min(step, len(in))
					if k, err := m.Write([]byte(in[:n])); k != n || err != nil {
						t.Fatalf("Write = %d, %v", k, err)
					}
					in = in[n:]
				}
				m.finish()
				if got := rec.Body.String(); got != tt.want {
					t.Fatalf("writes of %d bytes: client got %d bytes %.200q, want %d bytes %.200q",
						step, len(got), got, len(tt.want), tt.want)
				}
				if got, _ := m.tokens(); got != tt.tokens {
					t.Fatalf("writes of %d bytes: tokens %d, want %d", step, got, tt.tokens)
				}
			}
		})
	}
}

// TestUsageMeterPassesThrough: without strip, or for a JSON answer, every byte passes at once.
func TestUsageMeterPassesThrough(t *testing.T) {
	const in = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n"
	for _, tc := range []struct {
		ctype string
		strip bool
	}{{"text/event-stream", false}, {"application/json", true}} {
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Type", tc.ctype)
		m := newUsageMeter(rec, nil, tc.strip)
		_, _ = m.Write([]byte(in[:10]))
		if rec.Body.Len() != 10 {
			t.Fatalf("%s strip=%v: %d bytes passed at once, want 10", tc.ctype, tc.strip, rec.Body.Len())
		}
		_, _ = m.Write([]byte(in[10:]))
		m.finish()
		if rec.Body.String() != in {
			t.Fatalf("%s strip=%v: client got %q", tc.ctype, tc.strip, rec.Body)
		}
	}
}
