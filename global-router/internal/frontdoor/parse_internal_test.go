package frontdoor

import (
	"strings"
	"testing"
)

var parseCases = []struct {
	name, body, model, text string
	status                  int // 0: parsed
}{
	{"completion", `{"model":"m","prompt":"hello there","stream":true}`, "m", "hello there", 0},
	{"prompt array", `{"model":"m","prompt":["ab","cd"]}`, "m", "abcd", 0},
	{"token ids give no text", `{"model":"m","prompt":[1,2,3]}`, "m", "", 0},
	{"escapes decoded", `{"model":"m","prompt":"a\"b\\c\nd\u00e9"}`, "m", "a\"b\\c\nd\u00e9", 0},
	{"chat strings and parts", `{"model":"m","messages":[{"role":"system","content":"be brief"},` +
		`{"role":"user","content":[{"type":"text","text":"hi "},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"there"}]}]}`,
		"m", "be briefhi there", 0},
	{"embeddings input", `{"model":"m","input":["a","b\tc"]}`, "m", "ab\tc", 0},
	{
		"the last of prompt, messages and input wins",
		`{"input":"3","messages":[{"content":"2"}],"prompt":"1","model":"m"}`,
		"m",
		"1",
		0,
	},
	{
		"null and odd values ignored",
		`{"model":"m","prompt":null,"messages":[{"content":7},{"content":[{"text":null},{"text":5},[1]]}]}`,
		"m",
		"",
		0,
	},
	{"last duplicate wins", `{"model":"m","prompt":"old","prompt":"new"}`, "m", "new", 0},
	{"malformed", `{"model":`, "", "", 400},
	{"missing model", `{"prompt":"x"}`, "", "", 400},
	{"empty model", `{"model":"","prompt":"x"}`, "", "", 400},
	{"model not a string", `{"model":3}`, "", "", 400},
	{"messages not an array", `{"model":"m","messages":"x"}`, "", "", 400},
	{"duplicate model", `{"model":"eu-only","model":"open"}`, "", "", 400},
	{"case-variant model", `{"model":"eu-only","Model":"open"}`, "", "", 400},
	{"case-variant stream", `{"model":"m","stream":false,"STREAM":true}`, "", "", 400},
	{"duplicate priority", `{"model":"m","priority":1,"priority":2}`, "", "", 400},
}

func TestParseRequest(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			b, perr := parseRequest([]byte(tc.body))
			model, text := b.Model, b.Prompt
			if tc.status != 0 {
				if perr == nil || perr.Status != tc.status {
					t.Fatalf("got model %q text %q err %+v, want status %d", model, text, perr, tc.status)
				}
				return
			}
			if perr != nil {
				t.Fatalf("status %d: %s", perr.Status, perr.Message)
			}
			if model != tc.model || string(text) != tc.text {
				t.Fatalf("got model %q text %q, want %q %q", model, text, tc.model, tc.text)
			}
		})
	}
}

// A plain prompt is not copied, and the text handed on never writes into the body: appending
// to it copies.
func TestParseRequestAliasesWithoutSharing(t *testing.T) {
	body := []byte(`{"model":"m","prompt":"abc","x":"zzzz"}`)
	b, perr := parseRequest(body)
	text := b.Prompt
	if perr != nil || string(text) != "abc" {
		t.Fatalf("text %q err %v", text, perr)
	}
	if &text[0] != &body[strings.Index(string(body), "abc")] {
		t.Errorf("the plain prompt was copied")
	}
	_ = append(text, "XXXX"...)
	if string(body) != `{"model":"m","prompt":"abc","x":"zzzz"}` {
		t.Fatalf("appending to the prompt text changed the body: %s", body)
	}
}

// A plain string's bytes are taken as sent, as the gateway takes them (so both tiers hash the
// same blocks), where decoding into a Go string would replace invalid UTF-8.
func TestParseRequestKeepsBytesAsSent(t *testing.T) {
	body := []byte("{\"model\":\"m\",\"prompt\":\"a\xffb\"}")
	b, perr := parseRequest(body)
	text := b.Prompt
	if perr != nil || string(text) != "a\xffb" {
		t.Fatalf("text %q err %v, want the bytes as sent", text, perr)
	}
}

// TestParseRequestNamesTheAmbiguousKey checks the 400 for a body both tiers refuse names the key.
func TestParseRequestNamesTheAmbiguousKey(t *testing.T) {
	_, perr := parseRequest([]byte(`{"model":"eu-only","Model":"open"}`))
	if perr == nil || perr.Param != "model" || !strings.Contains(perr.Message, `"Model"`) {
		t.Fatalf("got %+v, want a 400 naming the model key", perr)
	}
}
