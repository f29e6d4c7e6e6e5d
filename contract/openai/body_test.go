package openai

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchyard-dev/switchyard/contract"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		want   Body
		prompt string
	}{
		{"completion string", `{"model":"m","prompt":"hello","max_tokens":7,"stream":true}`,
			Body{Model: "m", Stream: true, MaxTokens: 7}, "hello"},
		{"completion array", `{"prompt":["ab","cd"],"model":"m"}`, Body{Model: "m"}, "abcd"},
		{"token ids", `{"model":"m","prompt":[1,2,3]}`, Body{Model: "m", PromptTokenIDs: 3}, ""},
		{"batched token ids", `{"model":"m","prompt":[[1,2],[3]]}`, Body{Model: "m", PromptTokenIDs: 3}, ""},
		{"chat strings", `{"model":"c","messages":[{"role":"system","content":"sys "},{"role":"user","content":"hi"}]}`,
			Body{Model: "c"}, "sys hi"},
		{
			"chat parts",
			`{"model":"c","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url",` +
				`"image_url":{"url":"x"}},{"type":"text","text":"b"}]}]}`,
			Body{Model: "c"},
			"ab",
		},
		{
			"chat null content",
			`{"model":"c","messages":[{"role":"assistant","content":null,"tool_calls":[]}]}`,
			Body{Model: "c"},
			"",
		},
		{"embeddings", `{"model":"e","input":"text to embed"}`, Body{Model: "e"}, "text to embed"},
		{"escapes", `{"model":"m\u0031","prompt":"a\nb\"c\u00e9\ud83d\ude00"}`, Body{Model: "m1"}, "a\nb\"cé😀"},
		{"stream options", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`,
			Body{Model: "m", Stream: true, IncludeUsage: true}, ""},
		{"max completion tokens and nulls", `{"model":"m","max_completion_tokens":9,"stream":null,"stream_options":null}`,
			Body{Model: "m", MaxTokens: 9}, ""},
		{
			"unknown fields skipped",
			`{"x":{"y":[1,2,{"z":"w"}],"t":true,"f":false,"n":null,"num":-1.5e3},"model":"m"}`,
			Body{Model: "m"},
			"",
		},
		{"whitespace", " \n{ \"model\" : \"m\" , \"prompt\" : \"p\" }\n", Body{Model: "m"}, "p"},
		{"priority", `{"model":"m","priority":-3}`, Body{Model: "m", Priority: -3, HasPriority: true}, ""},
		{"null priority", `{"model":"m","priority":null}`, Body{Model: "m"}, ""},
		{
			"routing keys nested are not routing keys",
			`{"model":"m","metadata":{"model":"x","Model":"y","stream":1}}`,
			Body{Model: "m"},
			"",
		},
		{"look-alike keys", `{"model":"m","models":"x","streams":true,"priority_class":"p"}`, Body{Model: "m"}, ""},
		{"embeddings strings", `{"model":"e","input":["one ","two"]}`, Body{Model: "e"}, "one two"},
		{"embeddings token ids", `{"model":"e","input":[[1,2],[3,4,5]]}`, Body{Model: "e", PromptTokenIDs: 5}, ""},
		{"responses string input", `{"model":"r","input":"hello","max_output_tokens":16,"stream":true}`,
			Body{Model: "r", Stream: true, MaxTokens: 16}, "hello"},
		{"responses instructions first", `{"model":"r","input":"question","instructions":"be brief. "}`,
			Body{Model: "r"}, "be brief. question"},
		{
			"responses instructions alone",
			`{"model":"r","instructions":"sys","previous_response_id":"resp_1"}`,
			Body{Model: "r"},
			"sys",
		},
		{"responses messages", `{"model":"r","instructions":"sys ","input":[{"role":"user","content":"hi "},` +
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello "}]},` +
			`{"role":"user","content":[{"type":"input_text","text":"again"},{"type":"input_image","image_url":"data:x"}]}]}`,
			Body{Model: "r"}, "sys hi hello again"},
		{"responses other items add nothing", `{"model":"r","input":[{"role":"user","content":"a"},` +
			`{"content":"tool said","type":"function_call_output","call_id":"c"},{"type":"function_call","name":"f",` +
			`"arguments":"{}"},` +
			`{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"hmm"}]},{"type":"item_reference",` +
			`"id":"x"},` +
			`{"role":"user","content":"b","type":"message"}]}`, Body{Model: "r"}, "ab"},
		{
			"responses type not a string",
			`{"model":"r","input":[{"content":"a","type":1},{"content":"b"}]}`,
			Body{Model: "r"},
			"b",
		},
		{
			"responses escaped instructions",
			`{"model":"r","input":[{"content":"x\ny"}],"instructions":"\u00e9 "}`,
			Body{Model: "r"},
			"é x\ny",
		},
		{
			"responses null instructions",
			`{"model":"r","instructions":"old","instructions":null,"input":"i"}`,
			Body{Model: "r"},
			"i",
		},
		{
			"max_output_tokens last wins",
			`{"model":"r","max_tokens":3,"max_output_tokens":5}`,
			Body{Model: "r", MaxTokens: 5},
			"",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b Body
			if err := Parse([]byte(tt.body), &b); err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if string(b.Prompt) != tt.prompt {
				t.Errorf("prompt = %q, want %q", b.Prompt, tt.prompt)
			}
			b.Prompt = nil
			if !sameFields(b, tt.want) {
				t.Errorf("body = %+v, want %+v", b, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		missing bool
	}{
		{"empty", ``, false},
		{"not object", `["model"]`, false},
		{"truncated", `{"model":"m"`, false},
		{"trailing garbage", `{"model":"m"} x`, false},
		{"trailing comma", `{"model":"m",}`, false},
		{"bad escape", `{"model":"m","prompt":"\q"}`, false},
		{"control char", "{\"model\":\"m\",\"prompt\":\"a\x01\"}", false},
		{"bad number", `{"model":"m","x":01}`, false},
		{"model not string", `{"model":5}`, false},
		{"negative max_tokens", `{"model":"m","max_tokens":-1}`, false},
		{"fractional max_tokens", `{"model":"m","max_tokens":1.5}`, false},
		{"stream not bool", `{"model":"m","stream":"yes"}`, false},
		{"deep nesting", `{"model":"m","x":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`, false},
		{"negative max_output_tokens", `{"model":"m","max_output_tokens":-1}`, false},
		{"bad input item", `{"model":"m","input":[{"content":"x"]}`, false},
		{"missing model", `{"prompt":"x"}`, true},
		{"responses without model", `{"input":"x","instructions":"y"}`, true},
		{"empty model", `{"model":""}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b Body
			err := Parse([]byte(tt.body), &b)
			if err == nil {
				t.Fatal("Parse succeeded, want error")
			}
			if got := errors.Is(err, ErrMissingModel); got != tt.missing {
				t.Fatalf("errors.Is(ErrMissingModel) = %v, want %v (err %v)", got, tt.missing, err)
			}
		})
	}
}

// FuzzParse checks the scanner against encoding/json: it must accept exactly the valid JSON
// objects and agree on the fields it reads.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":"hello","stream":true,"max_tokens":3}`,
		`{"model":"c","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`,
		`{"model":"\u00e9","input":["a","b"]}`, `{"model":"m","prompt":[[1,2],[3]]}`, `{}`, `[`, `{"a":1e5}`,
		`{"model":"eu","Model":"open"}`, `{"model":"m","stream":true,"\u017ftream":false}`, `{"model":"m","priority":-2}`,
		`{"model":"r","instructions":"sys","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],` +
			`"stream":true,"max_output_tokens":8}`,
		`{"model":"r","input":[{"type":"message","role":"user","content":"a"},{"type":"function_call_output",` +
			`"output":"b"}],"Stream":true}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b Body
		err := Parse(data, &b)
		var ref struct {
			Model    any `json:"model"`
			Stream   any `json:"stream"`
			Priority any `json:"priority"`
		}
		refErr := json.Unmarshal(data, &ref)
		if refErr != nil && err == nil {
			t.Fatalf("Parse accepted invalid JSON %q (%v)", data, refErr)
		}
		if err != nil {
			return
		}
		// An accepted body has each routing key at most once, in its exact spelling, so a
		// case-folding, last-duplicate-wins reader sees the same values.
		if s, _ := ref.Model.(string); s != b.Model {
			t.Fatalf("model = %q, encoding/json says %q", b.Model, s)
		}
		if st, _ := ref.Stream.(bool); st != b.Stream {
			t.Fatalf("stream = %v, encoding/json says %v", b.Stream, ref.Stream)
		}
		if p, ok := ref.Priority.(float64); ok != b.HasPriority || (ok && int(p) != b.Priority) {
			t.Fatalf("priority = %d (%v), encoding/json says %v", b.Priority, b.HasPriority, ref.Priority)
		}
	})
}

func sameFields(a, b Body) bool {
	return a.Model == b.Model && a.Stream == b.Stream && a.IncludeUsage == b.IncludeUsage &&
		a.MaxTokens == b.MaxTokens && a.PromptTokenIDs == b.PromptTokenIDs &&
		a.Priority == b.Priority && a.HasPriority == b.HasPriority
}

// TestParseAmbiguousKeys covers the bodies that JSON readers read differently: each is refused
// with the routing key named, whatever the key's value.
func TestParseAmbiguousKeys(t *testing.T) {
	tests := []struct {
		name, body, key, found string
	}{
		{"duplicate model", `{"model":"eu-only","model":"open"}`, "model", "model"},
		{"case-variant model", `{"model":"eu-only","Model":"open"}`, "model", "Model"},
		{"case-variant before the model", `{"MODEL":"open","model":"eu-only"}`, "model", "MODEL"},
		{"case-variant model alone", `{"Model":"open"}`, "model", "Model"},
		{"escaped duplicate model", `{"model":"a","\u006dodel":"b"}`, "model", "model"},
		{"escaped case-variant", `{"model":"a","\u004dodel":"b"}`, "model", "Model"},
		{"duplicate stream", `{"model":"m","stream":false,"stream":true}`, "stream", "stream"},
		{"case-variant stream", `{"model":"m","stream":false,"Stream":true}`, "stream", "Stream"},
		// encoding/json folds U+017F (long s) to s, so this key is "stream" to a Go reader.
		{"long-s stream", "{\"model\":\"m\",\"\u017ftream\":true}", "stream", "\u017ftream"},
		{"duplicate priority", `{"model":"m","priority":1,"priority":9}`, "priority", "priority"},
		{"case-variant priority", `{"model":"m","Priority":9}`, "priority", "Priority"},
		{"duplicate null model", `{"model":"m","model":null}`, "model", "model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b Body
			err := Parse([]byte(tt.body), &b)
			var amb *AmbiguousKeyError
			if !errors.As(err, &amb) || !errors.Is(err, ErrAmbiguousKey) {
				t.Fatalf("Parse(%s) = %v, want an AmbiguousKeyError", tt.body, err)
			}
			if amb.Key != tt.key || amb.Found != tt.found {
				t.Fatalf("error names %q as %q, want %q as %q", amb.Key, amb.Found, tt.key, tt.found)
			}
			if !strings.Contains(err.Error(), tt.key) {
				t.Fatalf("message %q does not name the key", err)
			}
		})
	}
}

// TestParseBadPriority covers priorities that are not 32-bit integers.
func TestParseBadPriority(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","priority":1.5}`, `{"model":"m","priority":"1"}`, `{"model":"m","priority":1e3}`,
		`{"model":"m","priority":99999999999}`, `{"model":"m","priority":true}`,
	} {
		var b Body
		if err := Parse([]byte(body), &b); err == nil {
			t.Errorf("Parse(%s) succeeded with priority %d, want an error", body, b.Priority)
		}
	}
}

// BenchmarkParseResponses reads a Responses API body whose instructions follow a conversation
// of input items, so that the instructions are joined in front of the input's text.
func BenchmarkParseResponses(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"model":"llama","stream":true,"max_output_tokens":256,"input":[`)
	for i := range 40 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"` + strings.Repeat(
				"turn text ",
				40,
			) + `"}]}`,
		)
	}
	sb.WriteString(`],"instructions":"` + strings.Repeat("be helpful ", 100) + `"}`)
	data := []byte(sb.String())
	body := Body{MaxPrompt: 4096}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Parse(data, &body); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseSessionID(t *testing.T) {
	long := strings.Repeat("s", contract.MaxSessionID)
	tests := []struct {
		name, body, want string
	}{
		{"none", `{"model":"m"}`, ""},
		{"user", `{"model":"m","user":"u-1"}`, "u-1"},
		{"metadata", `{"model":"m","metadata":{"tag":"x","session_id":"conv-7"}}`, "conv-7"},
		{"metadata wins over user", `{"model":"m","metadata":{"session_id":"conv-7"},"user":"u-1"}`, "conv-7"},
		{"user after metadata without a session", `{"model":"m","metadata":{"tag":"x"},"user":"u-1"}`, "u-1"},
		{"escaped", `{"model":"m","user":"a\u00e9\n"}`, "aé\n"},
		{"at the bound", `{"model":"m","user":"` + long + `"}`, long},
		{"over the bound is no session", `{"model":"m","user":"` + long + `s"}`, ""},
		{"empty is no session", `{"model":"m","user":""}`, ""},
		{"not a string", `{"model":"m","user":42,"metadata":{"session_id":["x"]}}`, ""},
		{"null metadata", `{"model":"m","metadata":null,"user":"u"}`, "u"},
		{"metadata not an object", `{"model":"m","metadata":"x"}`, ""},
		{"last user wins", `{"model":"m","user":"a","user":"b"}`, "b"},
		{"later null user clears", `{"model":"m","user":"a","user":null}`, ""},
		{"nested session_id is not one", `{"model":"m","metadata":{"x":{"session_id":"deep"}}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b Body
			if err := Parse([]byte(tt.body), &b); err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if string(b.SessionID) != tt.want {
				t.Fatalf("SessionID = %q, want %q", b.SessionID, tt.want)
			}
			b.Release(0)
			if b.SessionID != nil {
				t.Fatal("Release kept the session id, which may alias the body")
			}
		})
	}
	var b Body
	if err := Parse([]byte(`{"model":"m","user":"a"}`), &b); err != nil {
		t.Fatal(err)
	}
	if err := Parse([]byte(`{"model":"m"}`), &b); err != nil || b.SessionID != nil {
		t.Fatalf("a reused Body kept the last request's session id %q (%v)", b.SessionID, err)
	}
}

// FuzzParseSessionID checks the session id against encoding/json's reading of the same fields
// (into maps, whose keys match exactly and whose duplicates the last wins, as the parser reads
// them): metadata.session_id, else user, each only as a non-empty string within the bound.
func FuzzParseSessionID(f *testing.F) {
	for _, s := range []string{`{"model":"m","user":"u"}`, `{"model":"m","metadata":{"session_id":"s"},"user":"u"}`,
		`{"model":"m","metadata":{"session_id":"\u00e9"}}`, `{"model":"m","user":1}`,
		`{"model":"m","metadata":[],"user":"u"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b Body
		if Parse(data, &b) != nil {
			return
		}
		if b.SessionID != nil && (len(b.SessionID) == 0 || len(b.SessionID) > contract.MaxSessionID) {
			t.Fatalf("session id of %d bytes: empty or over the bound", len(b.SessionID))
		}
		var ref map[string]any
		if !utf8.Valid(data) || json.Unmarshal(data, &ref) != nil {
			return // encoding/json replaces invalid UTF-8; the parser keeps the bytes
		}
		valid := func(v any) string {
			if s, _ := v.(string); len(s) <= contract.MaxSessionID {
				return s
			}
			return ""
		}
		meta, _ := ref["metadata"].(map[string]any)
		want := valid(meta["session_id"])
		if want == "" {
			want = valid(ref["user"])
		}
		if string(b.SessionID) != want {
			t.Fatalf("SessionID = %q, encoding/json reads %q", b.SessionID, want)
		}
	})
}
