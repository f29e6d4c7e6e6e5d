package frontdoor

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// referenceParse is the straightforward reading of a request body the optimised parseRequest
// must agree with: encoding/json into raw fields, each decoded again into strings.
func referenceParse(body []byte) (model string, text []byte, ok bool) {
	var req struct {
		Model    *string         `json:"model"`
		Prompt   json.RawMessage `json:"prompt"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Input json.RawMessage `json:"input"`
	}
	if json.Unmarshal(body, &req) != nil || req.Model == nil || *req.Model == "" {
		return "", nil, false
	}
	add := func(raw json.RawMessage) {
		var s string
		if len(raw) == 0 {
			return
		}
		if json.Unmarshal(raw, &s) == nil {
			text = append(text, s...)
			return
		}
		var parts []json.RawMessage
		if json.Unmarshal(raw, &parts) != nil {
			return
		}
		for _, p := range parts {
			var part struct {
				Text string `json:"text"`
			}
			if json.Unmarshal(p, &s) == nil {
				text = append(text, s...)
			} else if json.Unmarshal(p, &part) == nil {
				text = append(text, part.Text...)
			}
		}
	}
	add(req.Prompt)
	for _, m := range req.Messages {
		add(m.Content)
	}
	add(req.Input)
	return *req.Model, text, true
}

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
	{"prompt, messages and input in order", `{"input":"3","messages":[{"content":"2"}],"prompt":"1","model":"m"}`, "m", "123", 0},
	{"null and odd values ignored", `{"model":"m","prompt":null,"messages":[{"content":7},{"content":[{"text":null},{"text":5},[1]]}],"input":{}}`, "m", "", 0},
	{"last duplicate wins", `{"model":"m","prompt":"old","prompt":"new"}`, "m", "new", 0},
	{"malformed", `{"model":`, "", "", 400},
	{"missing model", `{"prompt":"x"}`, "", "", 400},
	{"empty model", `{"model":"","prompt":"x"}`, "", "", 400},
	{"model not a string", `{"model":3}`, "", "", 400},
	{"messages not an array", `{"model":"m","messages":"x"}`, "", "", 400},
}

func TestParseRequest(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			model, text, perr := parseRequest([]byte(tc.body))
			if tc.status != 0 {
				if perr == nil || perr.status != tc.status {
					t.Fatalf("got model %q text %q err %+v, want status %d", model, text, perr, tc.status)
				}
				return
			}
			if perr != nil {
				t.Fatalf("status %d: %s", perr.status, perr.message)
			}
			if model != tc.model || string(text) != tc.text {
				t.Fatalf("got model %q text %q, want %q %q", model, text, tc.model, tc.text)
			}
			if refModel, refText, ok := referenceParse([]byte(tc.body)); !ok || refModel != model || string(refText) != string(text) {
				t.Fatalf("reference reads model %q text %q ok %v", refModel, refText, ok)
			}
		})
	}
}

// A plain prompt is not copied, and the text handed on never writes into the body: appending
// to it copies.
func TestParseRequestAliasesWithoutSharing(t *testing.T) {
	body := []byte(`{"model":"m","prompt":"abc","x":"zzzz"}`)
	_, text, perr := parseRequest(body)
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
	_, text, perr := parseRequest(body)
	if perr != nil || string(text) != "a\xffb" {
		t.Fatalf("text %q err %v, want the bytes as sent", text, perr)
	}
}

// FuzzParseRequestMatchesReference checks the optimised parser against referenceParse on any
// body valid as UTF-8 (on invalid UTF-8 they differ on purpose, see above).
func FuzzParseRequestMatchesReference(f *testing.F) {
	for _, tc := range parseCases {
		f.Add([]byte(tc.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !utf8.Valid(body) {
			return
		}
		orig := string(body)
		model, text, perr := parseRequest(body)
		refModel, refText, ok := referenceParse(body)
		if ok != (perr == nil) || model != refModel || string(text) != string(refText) {
			t.Fatalf("parseRequest = %q %q %v, reference = %q %q %v", model, text, perr, refModel, refText, ok)
		}
		if string(body) != orig {
			t.Fatalf("parsing changed the body")
		}
	})
}
