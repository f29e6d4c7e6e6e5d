package importgraph

import (
	"bytes"
	"fmt"
	"strings"
)

// Mermaid renders g as a fenced Mermaid `graph LR`: the binary's packages in one subgraph (its
// plugins, if any, in a nested one), the shared modules' packages in another, then the edges.
// The output depends only on g, so regenerating an unchanged tree changes nothing.
func Mermaid(g Graph) string {
	var own, plugins, common []string
	for _, n := range g.Nodes {
		switch {
		case Module(Root+n) != g.Module:
			common = append(common, n)
		case strings.Contains(n, "/internal/plugins/"):
			plugins = append(plugins, n)
		default:
			own = append(own, n)
		}
	}
	var b strings.Builder
	b.WriteString("```mermaid\ngraph LR\n")
	fmt.Fprintf(&b, "  subgraph %s[\"%s\"]\n", id(g.Module), g.Module)
	for _, n := range own {
		node(&b, "    ", n, g.Module)
	}
	if len(plugins) > 0 {
		fmt.Fprintf(&b, "    subgraph %s[\"internal/plugins\"]\n", id(g.Module+"/plugins"))
		for _, n := range plugins {
			node(&b, "      ", n, g.Module)
		}
		b.WriteString("    end\n")
	}
	b.WriteString("  end\n")
	if len(common) > 0 {
		b.WriteString("  subgraph shared[\"shared modules\"]\n")
		for _, n := range common {
			node(&b, "    ", n, g.Module)
		}
		b.WriteString("  end\n")
	}
	for _, from := range g.Nodes {
		for _, to := range g.Edges[from] {
			fmt.Fprintf(&b, "  %s --> %s\n", id(from), id(to))
		}
	}
	b.WriteString("```\n")
	return b.String()
}

func node(b *strings.Builder, indent, path, mod string) {
	fmt.Fprintf(b, "%s%s[\"%s\"]\n", indent, id(path), label(path, mod))
}

// label is how a node reads: a binary's package relative to its module's internal/ (commands
// keep cmd/; plugins stand in their own subgraph, by name), a shared package by its path,
// protobuf packages without proto/gen/switchyard.
func label(path, mod string) string {
	if rest, ok := strings.CutPrefix(path, mod+"/"); ok {
		return strings.TrimPrefix(strings.TrimPrefix(rest, "internal/"), "plugins/")
	}
	if rest, ok := strings.CutPrefix(path, "proto/gen/switchyard/"); ok {
		return "proto/" + rest
	}
	return path
}

// id turns an import path into a Mermaid node id (letters, digits and underscores).
func id(path string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, path)
}

// Begin and End are the markers between which Update writes a binary's graph.
func Begin(name string) string { return "<!-- importgraph:" + name + " -->" }

// End is the closing marker of Begin(name).
func End(name string) string { return "<!-- /importgraph:" + name + " -->" }

// Update replaces what stands between each graph's markers in doc with the graph, keyed by
// module name. Every key must have exactly one pair of markers, in order.
func Update(doc []byte, graphs map[string]string) ([]byte, error) {
	out := doc
	for name, graph := range graphs {
		begin, end := []byte(Begin(name)), []byte(End(name))
		if n := bytes.Count(out, begin); n != 1 {
			return nil, fmt.Errorf("importgraph: marker %s appears %d times, want once", begin, n)
		}
		if n := bytes.Count(out, end); n != 1 {
			return nil, fmt.Errorf("importgraph: marker %s appears %d times, want once", end, n)
		}
		i := bytes.Index(out, begin) + len(begin)
		j := bytes.Index(out, end)
		if j < i {
			return nil, fmt.Errorf("importgraph: marker %s comes before %s", end, begin)
		}
		var b bytes.Buffer
		b.Write(out[:i])
		b.WriteString("\n" + graph)
		b.Write(out[j:])
		out = b.Bytes()
	}
	return out, nil
}

// Render builds and renders every binary's graph from pkgs, keyed by module name.
func Render(pkgs []Package) (map[string]string, error) {
	graphs := map[string]string{}
	for _, m := range Binaries {
		g, err := Build(pkgs, m)
		if err != nil {
			return nil, err
		}
		graphs[m] = Mermaid(g)
	}
	return graphs, nil
}
