package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"unicode/utf8"
)

func TestPromptLimit(t *testing.T) {
	bodies := []struct {
		name, body, prompt string
	}{
		{"one plain string", `{"model":"m","prompt":"hello world"}`, "hello world"},
		{"one escaped string", `{"model":"m","prompt":"a\nb\"c\u00e9"}`, "a\nb\"cé"},
		{"strings", `{"model":"m","prompt":["ab","","cd\t","ef"]}`, "abcd\tef"},
		{
			"chat",
			`{"messages":[{"role":"system","content":"sys "},{"role":"user","content":[{"type":"text","text":"x\\y"}]}],"model":"c"}`,
			"sys x\\y",
		},
		{"repeated member", `{"model":"m","prompt":"first","prompt":"second"}`, "second"},
		{"instructions after plain input", `{"model":"r","input":"question","instructions":"sys. "}`, "sys. question"},
		{
			"instructions before items",
			`{"model":"r","instructions":"s\u00e9 ","input":[{"role":"user","content":"ab"},{"content":[{"type":"input_text","text":"c\nd"}]}]}`,
			"sé abc\nd",
		},
		{
			"instructions after items",
			`{"model":"r","input":[{"content":"a\tb"},{"type":"function_call_output","output":"x"},{"content":"cd"}],"instructions":"sys "}`,
			"sys a\tbcd",
		},
	}
	for _, tt := range bodies {
		for _, limit := range []int{0, 1, 3, 5, 1000} {
			t.Run(fmt.Sprintf("%s/limit %d", tt.name, limit), func(t *testing.T) {
				b := Body{MaxPrompt: limit}
				if err := Parse([]byte(tt.body), &b); err != nil {
					t.Fatal(err)
				}
				want := tt.prompt
				if limit > 0 && len(want) > limit {
					want = want[:limit]
				}
				if string(b.Prompt) != want || b.PromptBytes != len(tt.prompt) || b.MaxPrompt != limit {
					t.Fatalf(
						"limit %d: prompt %q (%d bytes), want %q (%d bytes)",
						limit,
						b.Prompt,
						b.PromptBytes,
						want,
						len(tt.prompt),
					)
				}
			})
		}
	}
}

func TestPromptAliasesPlainString(t *testing.T) {
	data := []byte(`{"model":"m","prompt":"no escapes here"}`)
	orig := bytes.Clone(data)
	var b Body
	if err := Parse(data, &b); err != nil {
		t.Fatal(err)
	}
	if at := bytes.Index(data, []byte("no escapes")); &b.Prompt[0] != &data[at] {
		t.Fatal("a plain prompt string was copied")
	}
	// Reusing the Body must not write into the previous request's data.
	if err := Parse([]byte(`{"model":"m","prompt":["x","y\n"]}`), &b); err != nil {
		t.Fatal(err)
	}
	if string(b.Prompt) != "xy\n" || !bytes.Equal(data, orig) {
		t.Fatalf("prompt %q; first body now %q", b.Prompt, data)
	}
}

// FuzzPromptLimit checks that a bounded parse keeps a prefix of the unbounded prompt and the
// same length, and accepts exactly the same bodies.
func FuzzPromptLimit(f *testing.F) {
	f.Add([]byte(`{"model":"m","prompt":["ab","c\u00e9d"]}`), uint8(3))
	f.Add([]byte(`{"model":"c","messages":[{"content":"x\ny"},{"content":[{"text":"z"}]}]}`), uint8(1))
	f.Add(
		[]byte(
			`{"model":"r","input":[{"content":"x\ny"},{"type":"reasoning","content":[{"text":"z"}]}],"instructions":"ab\u00e9"}`,
		),
		uint8(4),
	)
	f.Add(
		[]byte(
			`{"model":"r","input":["long",{"type":"x","content":"b"},{"content":"c"},{"content":["d",{"text":"e"}],"type":"reasoning"},{"content":"f"}]}`,
		),
		uint8(5),
	)
	f.Fuzz(func(t *testing.T, data []byte, limit uint8) {
		var full, bounded Body
		errFull := Parse(data, &full)
		bounded.MaxPrompt = int(limit)
		errBounded := Parse(data, &bounded)
		if (errFull == nil) != (errBounded == nil) {
			t.Fatalf("errors differ: %v / %v", errFull, errBounded)
		}
		if errFull != nil {
			return
		}
		want := full.Prompt
		if limit > 0 && len(want) > int(limit) {
			want = want[:limit]
		}
		if !bytes.Equal(bounded.Prompt, want) || bounded.PromptBytes != full.PromptBytes ||
			full.PromptBytes != len(full.Prompt) {
			t.Fatalf("bounded %q/%d, full %q/%d", bounded.Prompt, bounded.PromptBytes, full.Prompt, full.PromptBytes)
		}
	})
}

// referencePrompt is the prompt text Parse must read, written the slow, obvious way with
// encoding/json's tokenizer: the last top-level "prompt", "input" or "messages" member wins;
// a prompt is a string, or an array (nested once) of strings and token ids and (in the
// top-level array) input items, whose "content" members count when the item's last "type" is
// absent or "message"; a message's "content" members (each of them, in order) are a string or
// an array of parts whose "text" strings count. The last "instructions" member, when it is a
// string, goes first. Strings are decoded as encoding/json decodes them. ok is false when data
// is not one valid JSON object.
func referencePrompt(data []byte) (text string, ok bool) {
	top, ok := orderedMembers(data)
	if !ok {
		return "", false
	}
	instructions := ""
	for _, m := range top {
		switch m.key {
		case "prompt", "input":
			text = promptText(m.value, 0)
		case "messages":
			text = ""
			var msgs []json.RawMessage
			_ = json.Unmarshal(m.value, &msgs) // null or not an array: no text
			for _, msg := range msgs {
				text += messageText(msg)
			}
		case "instructions":
			instructions = ""
			if m.value[0] == '"' {
				_ = json.Unmarshal(m.value, &instructions)
			}
		}
	}
	return instructions + text, true
}

// messageText is the text of every "content" member of a message object ("" for any other value).
func messageText(raw json.RawMessage) string {
	fields, _ := orderedMembers(raw)
	text := ""
	for _, f := range fields {
		if f.key == "content" {
			text += contentText(f.value)
		}
	}
	return text
}

// itemText is the text of a Responses input item: its content when its last "type" is absent
// or "message".
func itemText(raw json.RawMessage) string {
	fields, _ := orderedMembers(raw)
	message := true
	for _, f := range fields {
		if f.key == "type" {
			var typ string
			message = f.value[0] == '"' && json.Unmarshal(f.value, &typ) == nil && typ == "message"
		}
	}
	if !message {
		return ""
	}
	return messageText(raw)
}

type member struct {
	key   string
	value json.RawMessage
}

// orderedMembers returns the members of a JSON object in order, duplicates included.
func orderedMembers(data []byte) ([]member, bool) {
	if !json.Valid(data) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		out = append(out, member{tok.(string), v})
	}
	return out, true
}

func promptText(raw json.RawMessage, depth int) string {
	var s string
	if json.Unmarshal(raw, &s) == nil && raw[0] == '"' {
		return s
	}
	var elems []json.RawMessage
	if depth >= 2 || raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
		return ""
	}
	text := ""
	for _, e := range elems {
		if e[0] == '{' && depth == 0 {
			text += itemText(e)
			continue
		}
		text += promptText(e, depth+1)
	}
	return text
}

func contentText(raw json.RawMessage) string {
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	text := ""
	for _, p := range parts {
		fields, _ := orderedMembers(p)
		for _, f := range fields {
			if f.key == "text" && f.value[0] == '"' {
				var t string
				_ = json.Unmarshal(f.value, &t)
				text += t
			}
		}
	}
	return text
}

// FuzzPromptMatchesReference checks the prompt Parse reads against referencePrompt on any body
// that is valid UTF-8 (on invalid UTF-8 Parse keeps a plain string's bytes as sent, where
// encoding/json replaces them, so that both tiers hash the same blocks).
func FuzzPromptMatchesReference(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":"hello there","stream":true}`, `{"model":"m","prompt":["ab","cd"]}`,
		`{"model":"m","prompt":[1,2,3]}`, `{"model":"m","prompt":[["a",1],["b"]]}`,
		`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi "},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"there"}]}]}`,
		`{"input":"3","messages":[{"content":"2","content":"2b"}],"prompt":"1","model":"m"}`,
		`{"model":"m","prompt":null,"messages":[{"content":7},{"content":[{"text":null},{"text":5},[1],"s"]}],"input":{}}`,
		`{"model":"m","prompt":"a\"b\\c\nd\u00e9\ud83d\ude00"}`,
		`{"model":"r","instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"message","role":"assistant","content":"yo"}]}`,
		`{"model":"r","input":[{"content":"a","type":"function_call_output"},{"type":"reasoning","content":[{"text":"b"}]},{"content":"c","type":"message","type":"x"},["d",{"content":"e"}],"f"],"instructions":"\u00e9"}`,
		`{"model":"r","input":["long",{"type":"x","content":"b"},{"content":"c"},{"content":[{"text":"d"},{"text":"e"}],"type":"reasoning"},{"content":"f"}],"instructions":"i"}`,
		`{"model":"r","input":[{"content":[{"text":"a"},{"text":"b"}],"type":"x"},{"content":"c"}]}`,
		`{"model":"r","instructions":{"x":1},"input":[{"content":null},{"type":null,"content":"a"},{"content":"b","content":[{"text":"c"}]}],"instructions":"i"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) {
			return
		}
		var b Body
		err := Parse(data, &b)
		want, ok := referencePrompt(data)
		if !ok && err == nil {
			t.Fatalf("Parse accepted invalid JSON %q", data)
		}
		if err != nil {
			return
		}
		if string(b.Prompt) != want || b.PromptBytes != len(want) {
			t.Fatalf("prompt %q (%d bytes), reference %q", b.Prompt, b.PromptBytes, want)
		}
	})
}
