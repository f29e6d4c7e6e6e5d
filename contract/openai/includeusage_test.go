package openai

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestAppendIncludeUsage(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"absent", `{"model":"m","stream":true}`, `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`},
		{
			"absent, whitespace kept",
			"{ \"model\": \"m\", \"stream\": true }\n",
			"{ \"model\": \"m\", \"stream\": true ,\"stream_options\":{\"include_usage\":true}}\n",
		},
		{"present and true", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`, ""},
		{
			"false",
			`{"model":"m","stream":true,"stream_options":{"include_usage":false,"x":1}}`,
			`{"model":"m","stream":true,"stream_options":{"include_usage":true,"x":1}}`,
		},
		{
			"null include_usage",
			`{"stream_options":{"include_usage" : null},"model":"m","stream":true}`,
			`{"stream_options":{"include_usage" : true},"model":"m","stream":true}`,
		},
		{
			"other options only",
			`{"model":"m","stream":true,"stream_options":{"continuous_usage_stats":false}}`,
			`{"model":"m","stream":true,"stream_options":{"continuous_usage_stats":false,"include_usage":true}}`,
		},
		{
			"empty options",
			`{"model":"m","stream":true,"stream_options":{ }}`,
			`{"model":"m","stream":true,"stream_options":{ "include_usage":true}}`,
		},
		{
			"null options",
			`{"model":"m","stream_options":null,"stream":true,"prompt":"p"}`,
			`{"model":"m","stream_options":{"include_usage":true},"stream":true,"prompt":"p"}`,
		},
		{
			"last include_usage wins",
			`{"model":"m","stream":true,"stream_options":{"include_usage":true,"include_usage":false}}`,
			`{"model":"m","stream":true,"stream_options":{"include_usage":true,"include_usage":true}}`,
		},
		{
			"last stream_options wins",
			`{"model":"m","stream":true,"stream_options":{"include_usage":false},"stream_options":{}}`,
			`{"model":"m","stream":true,"stream_options":{"include_usage":false},"stream_options":{"include_usage":true}}`,
		},
		{
			"nested look-alike untouched",
			`{"model":"m","stream":true,"metadata":{"stream_options":{"include_usage":false}}}`,
			`{"model":"m","stream":true,"metadata":{"stream_options":{"include_usage":false}},` +
				`"stream_options":{"include_usage":true}}`,
		},
		{"not streamed", `{"model":"m","stream":false}`, ""},
		{"stream absent", `{"model":"m","stream_options":{"include_usage":false}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b Body
			if err := Parse([]byte(tt.in), &b); err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if b.NeedsUsage() != (tt.want != "") {
				t.Fatalf("NeedsUsage = %v, want %v", b.NeedsUsage(), tt.want != "")
			}
			got := b.AppendIncludeUsage([]byte("prefix:"), []byte(tt.in))
			if string(got) != "prefix:"+want {
				t.Fatalf("AppendIncludeUsage =\n%s\nwant\n%s", got, want)
			}
			if len(got)-len("prefix:")-len(tt.in) > MaxIncludeUsageGrowth {
				t.Fatalf("grew by %d bytes, more than MaxIncludeUsageGrowth", len(got)-len(tt.in))
			}
			checkAsksUsage(t, []byte(tt.in), got[len("prefix:"):])
		})
	}
}

// TestIncludeUsageInvalidOptions covers stream_options values that are not an object or null:
// Parse refuses them, so no body the helper could not edit is forwarded.
func TestIncludeUsageInvalidOptions(t *testing.T) {
	for _, in := range []string{
		`{"model":"m","stream":true,"stream_options":true}`,
		`{"model":"m","stream":true,"stream_options":"include_usage"}`,
		`{"model":"m","stream":true,"stream_options":[{"include_usage":true}]}`,
		`{"model":"m","stream":true,"stream_options":{"include_usage":"yes"}}`,
		`{"model":"m","stream":true,"stream_options":{"include_usage":1}}`,
		`{"model":"m","stream":true,"stream_options":{"include_usage":false}`,
	} {
		var b Body
		if err := Parse([]byte(in), &b); err == nil {
			t.Errorf("Parse(%s) succeeded, want an error", in)
		}
	}
}

// checkAsksUsage checks, with encoding/json, that out is in with stream_options.include_usage
// true and nothing else changed, and that Parse reads it so.
func checkAsksUsage(t *testing.T, in, out []byte) {
	t.Helper()
	var b Body
	if err := Parse(out, &b); err != nil {
		t.Fatalf("Parse of the rewritten body %q: %v", out, err)
	}
	var before, after map[string]any
	if err := json.Unmarshal(in, &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &after); err != nil {
		t.Fatalf("the rewritten body %q is not JSON: %v", out, err)
	}
	if st, _ := before["stream"].(bool); !st {
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("a body that does not stream changed: %q", out)
		}
		return
	}
	opts, _ := after["stream_options"].(map[string]any)
	if opts["include_usage"] != true || !b.IncludeUsage {
		t.Fatalf("rewritten body %q does not ask for usage", out)
	}
	delete(opts, "include_usage")
	if old, ok := before["stream_options"].(map[string]any); ok {
		delete(old, "include_usage")
	} else {
		after["stream_options"] = before["stream_options"]
		if _, had := before["stream_options"]; !had {
			delete(after, "stream_options")
		}
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("rewritten body %q changed more than include_usage (was %q)", out, in)
	}
}

// FuzzAppendIncludeUsage checks that every body Parse accepts and that streams without usage is
// rewritten into valid JSON asking for usage, with nothing else changed.
func FuzzAppendIncludeUsage(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","stream":true}`, `{"model":"m","stream":true,"stream_options":null}`,
		`{"model":"m","stream":true,"stream_options":{"include_usage":false,"x":[1,{}]}}`,
		`{"model":"m","stream":true,"stream_options":{},"messages":[{"content":"hi"}]}`,
		`{"stream_options":{"include_usage":null},"stream":true,"model":"\u00e9"}	`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b Body
		if Parse(data, &b) != nil {
			return
		}
		model, prompt := b.Model, string(b.Prompt)
		out := b.AppendIncludeUsage(nil, data)
		if len(out) > len(data)+MaxIncludeUsageGrowth {
			t.Fatalf("grew by %d bytes", len(out)-len(data))
		}
		if !b.NeedsUsage() {
			if string(out) != string(data) {
				t.Fatalf("a body that needs no usage changed: %q", out)
			}
			return
		}
		var after Body
		if err := Parse(out, &after); err != nil {
			t.Fatalf("Parse(%q): %v", out, err)
		}
		if !after.IncludeUsage || after.Model != model || string(after.Prompt) != prompt || !after.Stream {
			t.Fatalf("rewritten %q reads differently", out)
		}
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("rewritten %q is not JSON: %v", out, err)
		}
	})
}

func TestIsUsageChunk(t *testing.T) {
	usage := `"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}`
	tests := []struct {
		data string
		want bool
	}{
		{`{"id":"c","object":"chat.completion.chunk","choices":[],` + usage + `}`, true},
		{`{"id":"c",` + usage + `}`, true},
		{`{"id":"c","choices":[{"index":0,"delta":{"content":"a"}}],` + usage + `}`, false},
		{`{"id":"c","choices":[],"usage":null}`, false},
		{`{"id":"c","choices":[{"index":0,"delta":{}}],"usage":null}`, false},
		{`{"choices":[]}`, false},
		{`{"choices":[],` + usage, false},
		{`[DONE]`, false},
		{``, false},
		{`{"choices":[],` + usage + `,"usage":null}`, false},
	}
	for _, tt := range tests {
		if got := IsUsageChunk([]byte(tt.data)); got != tt.want {
			t.Errorf("IsUsageChunk(%s) = %v, want %v", tt.data, got, tt.want)
		}
	}
}
