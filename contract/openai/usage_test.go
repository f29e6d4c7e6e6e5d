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
		{
			"full",
			`{"id":"x","choices":[{"text":"a\"}"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":8}}}`,
			Usage{PromptTokens: 12, CompletionTokens: 3, CachedTokens: 8, HasCached: true},
			true,
		},
		{
			"no details",
			`{"usage":{"completion_tokens":2,"prompt_tokens":4,"total_tokens":6}}`,
			Usage{PromptTokens: 4, CompletionTokens: 2},
			true,
		},
		{
			"null details and counts",
			`{"usage":{"prompt_tokens":null,"completion_tokens":1,"prompt_tokens_details":null}}`,
			Usage{CompletionTokens: 1},
			true,
		},
		{"null cached", `{"usage":{"prompt_tokens_details":{"cached_tokens":null,"audio_tokens":0}}}`, Usage{}, true},
		{"usage null", `{"choices":[],"usage":null}`, Usage{}, false},
		{"nested usage is not the response's", `{"choices":[{"usage":{"prompt_tokens":1}}]}`, Usage{}, false},
		{"no usage", `{"choices":[]}`, Usage{}, false},
		{"truncated", `{"usage":{"prompt_tokens":1}`, Usage{}, false},
		{"fractional count", `{"usage":{"prompt_tokens":1.5}}`, Usage{}, false},
		{"not an object", `[{"usage":{"prompt_tokens":1}}]`, Usage{}, false},
		{
			"later details replace earlier",
			`{"usage":{"prompt_tokens_details":{"cached_tokens":5},"prompt_tokens_details":null}}`,
			Usage{},
			true,
		},
		// The Responses API: the response object's usage, and response.completed's nested one.
		{
			"responses",
			`{"id":"resp_1","object":"response","output":[{"type":"message","content":[{"type":"output_text","text":"usage"}]}],` +
				`"usage":{"input_tokens":20,"input_tokens_details":{"cached_tokens":16},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":25}}`,
			Usage{PromptTokens: 20, CompletionTokens: 5, CachedTokens: 16, HasCached: true},
			true,
		},
		{
			"responses without details",
			`{"usage":{"input_tokens":3,"output_tokens":4}}`,
			Usage{PromptTokens: 3, CompletionTokens: 4},
			true,
		},
		{
			"response.completed",
			`{"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","status":"completed","error":null,` +
				`"usage":{"input_tokens":7,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"total_tokens":9}}}`,
			Usage{PromptTokens: 7, CompletionTokens: 2, HasCached: true},
			true,
		},
		{
			"response.created",
			`{"type":"response.created","response":{"id":"resp_1","status":"in_progress","usage":null}}`,
			Usage{},
			false,
		},
		{"response without usage", `{"type":"response.in_progress","response":{"id":"resp_1"}}`, Usage{}, false},
		{"response not an object", `{"response":"x","usage":{"input_tokens":1}}`, Usage{PromptTokens: 1}, true},
		{
			"usage deeper than the response is not read",
			`{"response":{"output":[{"usage":{"input_tokens":1}}]}}`,
			Usage{},
			false,
		},
		{
			"last of usage and response.usage wins",
			`{"usage":{"input_tokens":1},"response":{"usage":{"output_tokens":2}}}`,
			Usage{CompletionTokens: 2},
			true,
		},
		{
			"alias, the last wins",
			`{"usage":{"prompt_tokens":1,"input_tokens":2,"output_tokens":3,"completion_tokens":4}}`,
			Usage{PromptTokens: 2, CompletionTokens: 4},
			true,
		},
		{"bad nested count", `{"response":{"usage":{"output_tokens":-1}}}`, Usage{}, false},
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
// case-insensitively): members are taken in order, so that of duplicates and aliases the last
// one counts.
func FuzzParseUsage(f *testing.F) {
	f.Add([]byte(`{"usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":8}}}`))
	f.Add([]byte(`{"choices":[{"text":"x"}],"usage":{"prompt_tokens":null,"prompt_tokens_details":null}}`))
	f.Add(
		[]byte(`{"usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":4},"output_tokens":1,"total_tokens":6}}`),
	)
	f.Add([]byte(`{"type":"response.completed","response":{"usage":{"input_tokens":5,"output_tokens":1}},"usage":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := ParseUsage(data)
		if !ok {
			return
		}
		want, wantOK := referenceUsage(t, data)
		if got != want || !wantOK {
			t.Fatalf("ParseUsage read %+v from %q; encoding/json %+v (%v)", got, data, want, wantOK)
		}
	})
}

// referenceUsage reads usage as ParseUsage must, with encoding/json: the last top-level
// "usage" or top-level "response" object's "usage" counts.
func referenceUsage(t *testing.T, data []byte) (u Usage, ok bool) {
	t.Helper()
	top, valid := orderedMembers(data)
	if !valid {
		t.Fatalf("ParseUsage accepted %q, which encoding/json refuses", data)
	}
	for _, m := range top {
		switch m.key {
		case "usage":
			u, ok = usageOf(t, m.value)
		case "response":
			if m.value[0] != '{' {
				continue
			}
			inner, _ := orderedMembers(m.value)
			for _, f := range inner {
				if f.key == "usage" {
					u, ok = usageOf(t, f.value)
				}
			}
		}
	}
	return u, ok
}

func usageOf(t *testing.T, raw json.RawMessage) (u Usage, ok bool) {
	if string(raw) == "null" {
		return Usage{}, false
	}
	fields, valid := orderedMembers(raw)
	if !valid {
		t.Fatalf("usage %q is not an object", raw)
	}
	for _, f := range fields {
		switch f.key {
		case "prompt_tokens", "input_tokens":
			count(t, f.value, &u.PromptTokens)
		case "completion_tokens", "output_tokens":
			count(t, f.value, &u.CompletionTokens)
		case "prompt_tokens_details", "input_tokens_details":
			u.CachedTokens, u.HasCached = 0, false
			if string(f.value) == "null" {
				continue
			}
			details, _ := orderedMembers(f.value)
			for _, d := range details {
				if d.key == "cached_tokens" {
					u.CachedTokens, u.HasCached = 0, string(d.value) != "null"
					count(t, d.value, &u.CachedTokens)
				}
			}
		}
	}
	return u, true
}

func count(t *testing.T, data json.RawMessage, dst *int) {
	t.Helper()
	if string(data) == "null" {
		*dst = 0
		return
	}
	if err := json.Unmarshal(data, dst); err != nil {
		t.Fatalf("count %q: %v", data, err)
	}
}
