package textgen_test

import (
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/modelsim/textgen"
)

func TestCountTokens(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {string(make([]byte, 8000)), 2000},
	}
	for _, tt := range tests {
		if got := textgen.CountTokens(tt.text); got != tt.want {
			t.Errorf("CountTokens(len %d) = %d, want %d", len(tt.text), got, tt.want)
		}
	}
}

func TestRenderChat(t *testing.T) {
	got := textgen.RenderChat([]textgen.Message{{"system", "be brief"}, {"user", "hi"}})
	want := "<|system|>\nbe brief\n<|user|>\nhi\n<|assistant|>\n"
	if got != want {
		t.Fatalf("RenderChat = %q, want %q", got, want)
	}
}

func TestGeneratorDeterministic(t *testing.T) {
	a := textgen.NewGenerator(1, "prompt")
	b := textgen.NewGenerator(1, "prompt")
	c := textgen.NewGenerator(2, "prompt")
	ta, tb, tc := a.AppendText(nil, 0, 50), b.AppendText(nil, 0, 50), c.AppendText(nil, 0, 50)
	if string(ta) != string(tb) {
		t.Fatal("same seed and prompt gave different text")
	}
	if string(ta) == string(tc) {
		t.Fatal("different seeds gave the same text")
	}
	if len(ta) != 50*textgen.CharsPerToken {
		t.Fatalf("50 tokens gave %d characters, want %d", len(ta), 50*textgen.CharsPerToken)
	}
	if n := a.Length(10, 20); n < 10 || n > 20 {
		t.Fatalf("Length(10, 20) = %d", n)
	}
}

func TestTokenize(t *testing.T) {
	for _, text := range []string{"", "a", "abcd", "abcde", strings.Repeat("0123456789abcdef", 4) + "xyz"} {
		ids := textgen.Tokenize(text)
		if len(ids) != textgen.CountTokens(text) {
			t.Errorf("%q: %d ids, CountTokens %d", text, len(ids), textgen.CountTokens(text))
		}
		if len(text) >= 4 && ids[0] != int64('a')<<24|int64('b')<<16|int64('c')<<8|int64('d') && text[0] == 'a' {
			t.Errorf("%q: first id %#x", text, ids[0])
		}
	}
	a, b := textgen.Tokenize("abcdabce"), textgen.Tokenize("abcdabcf")
	if a[0] != b[0] || a[1] == b[1] {
		t.Errorf("ids %v and %v: want the same first token and different second", a, b)
	}
}
