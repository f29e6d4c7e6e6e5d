package flagenv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Markers around the generated flags table in a doc page.
const (
	TableBegin = "<!-- flags:begin (generated from the Config struct by `make generate`; do not edit) -->"
	TableEnd   = "<!-- flags:end -->"
)

// PrintUsage writes every flag's line to w, for --help: the flag with its default, its
// environment variable when envPrefix is set, and the help text.
func PrintUsage(w io.Writer, flags []Flag, envPrefix string) {
	for _, f := range flags {
		head := "  --" + f.Name
		if !f.Bool || f.Default == "true" {
			head += "=" + f.Default
		}
		if envPrefix != "" {
			head += "  (" + EnvName(envPrefix, f.Name) + ")"
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", head, plain(f.Usage))
		for _, a := range f.Aliases {
			fmt.Fprintf(w, "  --%s\n    \tdeprecated: use --%s\n", a, f.Name)
		}
	}
}

// Markdown returns the flags as a Markdown table: flag, environment variable (when envPrefix is
// set), default and meaning, one row per flag in order.
func Markdown(flags []Flag, envPrefix string) string {
	var b strings.Builder
	if envPrefix != "" {
		b.WriteString("| flag | environment | default | meaning |\n|---|---|---|---|\n")
	} else {
		b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
	}
	for _, f := range flags {
		fmt.Fprintf(&b, "| `--%s` |", f.Name)
		if envPrefix != "" {
			fmt.Fprintf(&b, " `%s` |", EnvName(envPrefix, f.Name))
		}
		def := ""
		if f.Default != "" {
			def = "`" + f.Default + "`"
		}
		usage := f.Usage
		if len(f.Aliases) > 0 {
			usage += ". Deprecated alias: `--" + strings.Join(f.Aliases, "`, `--") + "`"
		}
		fmt.Fprintf(&b, " %s | %s |\n", cell(def), cell(usage))
	}
	return b.String()
}

// cell escapes a table cell's pipes.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// ReplaceTable returns doc with what lies between the TableBegin and TableEnd lines replaced by
// table. doc must hold each marker once, TableBegin first.
func ReplaceTable(doc []byte, table string) ([]byte, error) {
	begin, end := bytes.Index(doc, []byte(TableBegin)), bytes.Index(doc, []byte(TableEnd))
	switch {
	case begin < 0 || end < 0:
		return nil, errors.New("flagenv: the doc lacks the flags table's markers " + TableBegin + " and " + TableEnd)
	case end < begin || bytes.Count(doc, []byte(TableBegin)) > 1 || bytes.Count(doc, []byte(TableEnd)) > 1:
		return nil, errors.New("flagenv: the doc must hold each flags-table marker once, the begin marker first")
	}
	var out bytes.Buffer
	out.Write(doc[:begin+len(TableBegin)])
	out.WriteString("\n" + table)
	out.Write(doc[end:])
	return out.Bytes(), nil
}

// TB is the part of testing.TB that CheckDoc uses; *testing.T satisfies it. Fatalf must not
// return normally when called from the test's goroutine (testing's stops the goroutine); CheckDoc
// returns after calling it regardless, so a fake that records the failure sees it once.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// CheckDoc is a binary's flags-doc test: it fails tb when the doc page at path does not hold
// table (Markdown of the binary's flags) between the TableBegin and TableEnd markers, naming the
// page and `make generate`. With update (the test's -update-docs flag, which `make generate`
// sets) it rewrites the page's table instead. It fails tb, too, when the page cannot be read or
// written or lacks the markers.
func CheckDoc(tb TB, path, table string, update bool) {
	tb.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("flagenv: read the flags doc: %v", err)
		return
	}
	want, err := ReplaceTable(doc, table)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
		return
	}
	switch {
	case bytes.Equal(want, doc):
	case update:
		if err := os.WriteFile(path, want, 0o644); err != nil {
			tb.Fatalf("flagenv: rewrite the flags doc: %v", err)
		}
	default:
		tb.Fatalf("the flags table of %s is stale: run `make generate` and commit it", path)
	}
}
