// Package docs checks the documentation against the tree: every relative link and anchor in
// README.md and docs/*.md resolves (to a file or directory that exists, and to a heading or
// an explicit anchor of the Markdown file it names), so pages cannot rot silently when a file
// moves or a heading is renamed.
package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

// pages returns the Markdown files whose links are checked, relative to the workspace root.
func pages(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rel)
	}
	if len(out) < 5 {
		t.Fatalf("found %d pages under %s; the docs have more", len(out), root)
	}
	return out
}

func TestRelativeLinksResolve(t *testing.T) {
	root, err := harness.WorkspaceRoot()
	if err != nil {
		t.Fatal(err)
	}
	anchorCache := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchorCache[path]; ok {
			return a, nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		a := anchors(src)
		anchorCache[path] = a
		return a, nil
	}
	checked := 0
	for _, page := range pages(t, root) {
		src, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(src) {
			if problem := check(root, page, l.target, anchorsOf); problem != "" {
				t.Errorf("%s:%d: link %q: %s", page, l.line, l.target, problem)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d links; the parser is likely broken", checked)
	}
}

// check returns why target, a link on page, does not resolve, or "" when it does.
func check(root, page, target string, anchorsOf func(string) (map[string]bool, error)) string {
	if isExternal(target) {
		return ""
	}
	path, frag, _ := strings.Cut(target, "#")
	if strings.HasPrefix(path, "/") {
		return "absolute path; use a path relative to the page"
	}
	file := filepath.Join(root, page)
	if path != "" {
		file = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
		rel, err := filepath.Rel(root, file)
		if err != nil || strings.HasPrefix(rel, "..") {
			return "points outside the repository"
		}
		info, err := os.Stat(file)
		if err != nil {
			return "no such file or directory"
		}
		if info.IsDir() && frag != "" {
			return "anchor on a directory"
		}
	}
	if frag == "" {
		return ""
	}
	if !strings.HasSuffix(file, ".md") {
		return "anchor on a file that is not Markdown"
	}
	a, err := anchorsOf(file)
	if err != nil {
		return err.Error()
	}
	if !a[frag] {
		return fmt.Sprintf("no heading or anchor %q in %s", frag, filepath.Base(file))
	}
	return ""
}

func isExternal(target string) bool {
	for _, scheme := range []string{"http://", "https://", "mailto:"} {
		if strings.HasPrefix(target, scheme) {
			return true
		}
	}
	return false
}

type link struct {
	target string
	line   int
}

var (
	// inlineLink matches [text](target) and ![alt](target), with an optional "title".
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// refDef matches a reference definition: [label]: target
	refDef = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	// htmlRef matches href="..." and src="..." in HTML tags.
	htmlRef = regexp.MustCompile(`(?:href|src)="([^"]*)"`)
	// codeSpan matches inline code, whose brackets are not links.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
)

// links returns the link targets of a Markdown source outside code blocks and code spans.
func links(src []byte) []link {
	var out []link
	eachLine(src, func(n int, line string) {
		line = codeSpan.ReplaceAllString(line, "")
		for _, re := range []*regexp.Regexp{inlineLink, refDef, htmlRef} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				if m[1] != "" {
					out = append(out, link{target: m[1], line: n})
				}
			}
		}
	})
	return out
}

// eachLine calls fn with every line outside fenced code blocks, numbered from 1.
func eachLine(src []byte, fn func(n int, line string)) {
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	fence := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			for _, c := range trimmed[3:] {
				if c != rune(fence[0]) {
					break
				}
				fence += string(c)
			}
			continue
		}
		fn(n, line)
	}
}

var (
	heading    = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	mdLink     = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
)

// anchors returns the fragment identifiers a Markdown page has on GitHub: one per heading (a
// repeated heading gets -1, -2, ...) and every explicit <a id> or <a name>.
func anchors(src []byte) map[string]bool {
	out := map[string]bool{}
	count := map[string]int{}
	eachLine(src, func(_ int, line string) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		s := slug(m[1])
		if c := count[s]; c > 0 {
			out[fmt.Sprintf("%s-%d", s, c)] = true
		} else {
			out[s] = true
		}
		count[s]++
	})
	return out
}

// slug is GitHub's heading anchor: the heading's text (links by their text, code and emphasis
// markers and HTML tags dropped) in lower case, every character but letters, marks, digits,
// connector punctuation, hyphens and spaces removed, spaces turned into hyphens.
func slug(text string) string {
	text = mdLink.ReplaceAllString(text, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	text = strings.NewReplacer("`", "", "*", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-', unicode.IsLetter(r), unicode.IsDigit(r), unicode.IsNumber(r), unicode.IsMark(r),
			unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"Results (2026-12-05, thirteenth round): a fleet with room for the burst",
			"results-2026-12-05-thirteenth-round-a-fleet-with-room-for-the-burst"},
		{"Replaying a pod (`podreplay`)", "replaying-a-pod-podreplay"},
		{"Tier 2: `region-burst` (global-router)", "tier-2-region-burst-global-router"},
		{"mixed-fleet — 4 × h100 + 4 × a10g", "mixed-fleet--4--h100--4--a10g"},
		{"Passive health (outlier detection)", "passive-health-outlier-detection"},
		{"TLS and authentication", "tls-and-authentication"},
		{"**Bold** and [a link](x.md)", "bold-and-a-link"},
		{"snake_case names", "snake_case-names"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := slug(tt.heading); got != tt.want {
				t.Errorf("slug(%q) = %q, want %q", tt.heading, got, tt.want)
			}
		})
	}
}

func TestAnchorsAndLinks(t *testing.T) {
	src := []byte("# Title\n\n## Part\n\n## Part\n\n<a id=\"custom\"></a>\n\n" +
		"```sh\n# not a heading\n[x](nope.md)\n```\n\n" +
		"See [a](other.md#part), `[b](code.md)`, ![img](img/a.svg \"t\") and <img src=\"img/b.svg\">.\n\n[ref]: ref.md\n")
	a := anchors(src)
	for _, want := range []string{"title", "part", "part-1", "custom"} {
		if !a[want] {
			t.Errorf("anchor %q missing from %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("a comment inside a code block counted as a heading")
	}
	var got []string
	for _, l := range links(src) {
		got = append(got, l.target)
	}
	want := []string{"other.md#part", "img/a.svg", "img/b.svg", "ref.md"}
	if !slices.Equal(got, want) {
		t.Errorf("links %v, want %v", got, want)
	}
}

func TestCheck(t *testing.T) {
	root := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# Top\n")
	write("docs/a.md", "# A page\n## Section one\n")
	write("docs/img/x.svg", "<svg/>")
	anchorsOf := func(p string) (map[string]bool, error) {
		src, err := os.ReadFile(p)
		return anchors(src), err
	}
	tests := []struct {
		page, target string
		ok           bool
	}{
		{"docs/a.md", "#section-one", true},
		{"docs/a.md", "#section-two", false},
		{"docs/a.md", "../README.md#top", true},
		{"docs/a.md", "img/x.svg", true},
		{"docs/a.md", "img/y.svg", false},
		{"docs/a.md", "img/x.svg#frag", false},
		{"docs/a.md", "img", true},
		{"docs/a.md", "../../outside.md", false},
		{"docs/a.md", "/docs/a.md", false},
		{"README.md", "docs/a.md#a-page", true},
		{"README.md", "https://example.com/x#y", true},
	}
	for _, tt := range tests {
		t.Run(tt.page+" "+tt.target, func(t *testing.T) {
			problem := check(root, tt.page, tt.target, anchorsOf)
			if (problem == "") != tt.ok {
				t.Errorf("check = %q, want ok=%v", problem, tt.ok)
			}
		})
	}
}
