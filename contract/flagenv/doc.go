package flagenv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
