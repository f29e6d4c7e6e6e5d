package openai_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/contract/openai"
)

func TestParsePassthroughPaths(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // FormatPassthroughPaths of the result; "" when an error is wanted
	}{
		{"default", openai.DefaultPassthroughPaths, openai.DefaultPassthroughPaths},
		{"empty", "", "none"},
		{"none", "none", "none"},
		{"spaces", " /tokenize=json , /v1/audio/transcriptions=multipart ",
			"/tokenize=json,/v1/audio/transcriptions=multipart"},
		{"no source", "/tokenize", ""},
		{"unknown source", "/tokenize=xml", ""},
		{"relative", "tokenize=json", ""},
		{"root", "/=json", ""},
		{"twice", "/tokenize=json,/tokenize=multipart", ""},
		{"served itself", "/v1/chat/completions=json", ""},
		{"models", "/v1/models=json", ""},
		{"health", "/healthz=json", ""},
		{"wildcard", "/v1/{x}=json", ""},
		{"query", "/tokenize?x=1=json", ""},
		{"dot segment", "/v1/../admin=json", ""},
		{"double slash", "//tokenize=json", ""},
		{"too long", "/" + strings.Repeat("a", 300) + "=json", ""},
		{"too many", strings.Repeat("/a=json,", 64) + "/b=json", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := openai.ParsePassthroughPaths(tt.in)
			if tt.want == "" {
				if !errors.Is(err, openai.ErrPassthroughPaths) {
					t.Fatalf("ParsePassthroughPaths(%q) = %v, %v; want an ErrPassthroughPaths", tt.in, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePassthroughPaths(%q): %v", tt.in, err)
			}
			if s := openai.FormatPassthroughPaths(got); s != tt.want {
				t.Fatalf("ParsePassthroughPaths(%q) formats as %q, want %q", tt.in, s, tt.want)
			}
		})
	}
}

func TestDefaultPassthroughPathsSources(t *testing.T) {
	paths, err := openai.ParsePassthroughPaths(openai.DefaultPassthroughPaths)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]openai.ModelSource{"/tokenize": openai.ModelJSON, "/v1/rerank": openai.ModelJSON,
		"/v1/audio/transcriptions": openai.ModelForm, "/v1/audio/translations": openai.ModelForm}
	for _, p := range paths {
		if w, ok := want[p.Path]; ok && w != p.Model {
			t.Errorf("%s reads its model from %s, want %s", p.Path, p.Model, w)
		}
		delete(want, p.Path)
	}
	if len(want) > 0 {
		t.Errorf("default list lacks %v", want)
	}
}
