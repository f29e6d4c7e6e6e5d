package bbr

import (
	"bytes"
	"fmt"
	"testing"
)

func TestPromptLimit(t *testing.T) {
	bodies := []struct {
		name, body, prompt string
	}{
		{"one plain string", `{"model":"m","prompt":"hello world"}`, "hello world"},
		{"one escaped string", `{"model":"m","prompt":"a\nb\"c\u00e9"}`, "a\nb\"cé"},
		{"strings", `{"model":"m","prompt":["ab","","cd\t","ef"]}`, "abcd\tef"},
		{"chat", `{"messages":[{"role":"system","content":"sys "},{"role":"user","content":[{"type":"text","text":"x\\y"}]}],"model":"c"}`, "sys x\\y"},
		{"repeated member", `{"model":"m","prompt":"first","prompt":"second"}`, "second"},
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
					t.Fatalf("limit %d: prompt %q (%d bytes), want %q (%d bytes)", limit, b.Prompt, b.PromptBytes, want, len(tt.prompt))
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
		if !bytes.Equal(bounded.Prompt, want) || bounded.PromptBytes != full.PromptBytes || full.PromptBytes != len(full.Prompt) {
			t.Fatalf("bounded %q/%d, full %q/%d", bounded.Prompt, bounded.PromptBytes, full.Prompt, full.PromptBytes)
		}
	})
}
