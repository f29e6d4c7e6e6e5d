package openai

import (
	"encoding/json"
	"testing"
)

func TestParseUsage(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Usage
		ok   bool
	}{
		{"full", `{"id":"x","choices":[{"text":"a\"}"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":8}}}`,
			Usage{PromptTokens: 12, CompletionTokens: 3, CachedTokens: 8, HasCached: true}, true},
		{"no details", `{"usage":{"completion_tokens":2,"prompt_tokens":4,"total_tokens":6}}`, Usage{PromptTokens: 4, CompletionTokens: 2}, true},
		{"null details and counts", `{"usage":{"prompt_tokens":null,"completion_tokens":1,"prompt_tokens_details":null}}`, Usage{CompletionTokens: 1}, true},
		{"null cached", `{"usage":{"prompt_tokens_details":{"cached_tokens":null,"audio_tokens":0}}}`, Usage{}, true},
		{"usage null", `{"choices":[],"usage":null}`, Usage{}, false},
		{"nested usage is not the response's", `{"choices":[{"usage":{"prompt_tokens":1}}]}`, Usage{}, false},
		{"no usage", `{"choices":[]}`, Usage{}, false},
		{"truncated", `{"usage":{"prompt_tokens":1}`, Usage{}, false},
		{"fractional count", `{"usage":{"prompt_tokens":1.5}}`, Usage{}, false},
		{"not an object", `[{"usage":{"prompt_tokens":1}}]`, Usage{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseUsage([]byte(tt.in))
			if ok != tt.ok || got != tt.want {
				t.Fatalf("ParseUsage = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// FuzzParseUsage checks that whatever usage ParseUsage reads, encoding/json reads the same when
// keys match exactly (as in the OpenAI wire format; encoding/json alone also matches keys
// case-insensitively).
func FuzzParseUsage(f *testing.F) {
	f.Add([]byte(`{"usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":8}}}`))
	f.Add([]byte(`{"choices":[{"text":"x"}],"usage":{"prompt_tokens":null,"prompt_tokens_details":null}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := ParseUsage(data)
		if !ok {
			return
		}
		var want Usage
		top := members(t, data)
		u := members(t, top["usage"])
		count(t, u["prompt_tokens"], &want.PromptTokens)
		count(t, u["completion_tokens"], &want.CompletionTokens)
		if d, found := u["prompt_tokens_details"]; found && string(d) != "null" {
			c, found := members(t, d)["cached_tokens"]
			want.HasCached = found && string(c) != "null"
			count(t, c, &want.CachedTokens)
		}
		if got != want {
			t.Fatalf("ParseUsage read %+v from %q; encoding/json %+v", got, data, want)
		}
	})
}

// members decodes a JSON object's members with exact keys (the last of duplicates wins).
func members(t *testing.T, data []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		t.Fatalf("ParseUsage accepted %q; encoding/json: %v", data, err)
	}
	return m
}

func count(t *testing.T, data json.RawMessage, dst *int) {
	t.Helper()
	if data != nil {
		if err := json.Unmarshal(data, dst); err != nil {
			t.Fatalf("count %q: %v", data, err)
		}
	}
}
