package openai

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestEventType(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{
			"delta",
			`{"type":"response.output_text.delta","item_id":"msg_1","delta":"hi","sequence_number":4}`,
			"response.output_text.delta",
		},
		{
			"type last, after a nested type",
			`{"item":{"type":"message"},"output_index":0,"type":"response.output_item.added"}`,
			"response.output_item.added",
		},
		{"escaped", `{"type":"response.\u0063ompleted"}`, "response.completed"},
		{
			"chat chunk",
			`{"id":"c","object":"chat.completion.chunk","choices":[{"delta":{"content":"\"type\":\"response.x\""}}]}`,
			"",
		},
		{"not a string", `{"type":5}`, ""},
		{"last wins", `{"type":"a","type":null}`, ""},
		{"invalid JSON", `{"type":"response.completed"`, ""},
		{"not an object", `["type","x"]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EventType([]byte(tt.in)); string(got) != tt.want {
				t.Fatalf("EventType = %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzEventType checks EventType against encoding/json: a type it reads is the object's last
// top-level "type" member, a string (compared on valid UTF-8, where encoding/json does not
// replace bytes).
func FuzzEventType(f *testing.F) {
	f.Add([]byte(`{"type":"response.output_text.delta","delta":"x"}`))
	f.Add([]byte(`{"response":{"type":"x"},"type":"response.completed"}`))
	f.Add([]byte(`{"choices":[{"delta":{"content":"a"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := EventType(data)
		if got == nil || !utf8.Valid(data) {
			return
		}
		top, ok := orderedMembers(data)
		if !ok {
			t.Fatalf("EventType read %q from invalid JSON %q", got, data)
		}
		var want string
		for _, m := range top {
			if m.key == "type" {
				want = ""
				_ = json.Unmarshal(m.value, &want)
			}
		}
		if string(got) != want {
			t.Fatalf("EventType = %q from %q, encoding/json says %q", got, data, want)
		}
	})
}
