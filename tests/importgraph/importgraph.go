// Package importgraph draws the import graph of each Switchyard binary from `go list`: the
// module's packages that its commands are built from, and the workspace's shared packages
// (contract, gossip, proto, telemetry) they import, as a Mermaid `graph LR`. Update writes each graph
// between its markers in a Markdown file, so docs/architecture.md shows the code as it is and
// a test can tell when the committed graph is stale.
package importgraph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
)

// Root is the import path prefix of every workspace module.
const Root = "github.com/switchyard-dev/switchyard/"

// Binaries are the modules whose graphs are drawn, in the order the page shows them.
var Binaries = []string{"cluster-gateway", "global-router"}

// shared are the workspace modules the binaries may both import (tests/imports checks that
// they import no other).
var shared = []string{"contract", "gossip", "proto", "telemetry"}

// Package is the part of `go list -json` the graph reads.
type Package struct {
	ImportPath string
	Name       string
	Imports    []string // non-test imports only
}

// Load lists the packages of the binaries' and the shared modules from the workspace rooted
// at dir (test imports are not part of a binary, so they are left out).
func Load(ctx context.Context, dir string) ([]Package, error) {
	// -pgo=off: with a main package's default.pgo, go list reports the packages that binary
	// builds as variants of their own ("app [.../cmd/cluster-gateway]"); imports are the same.
	args := []string{"list", "-pgo=off", "-json=ImportPath,Name,Imports"}
	for _, m := range append(slices.Clone(Binaries), shared...) {
		args = append(args, "./"+m+"/...")
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("importgraph: go list: %w\n%s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("importgraph: go list: %w", err)
	}
	return decode(strings.NewReader(string(out)))
}

// decode reads the stream of JSON objects `go list -json` writes.
func decode(r io.Reader) ([]Package, error) {
	var pkgs []Package
	dec := json.NewDecoder(r)
	for {
		var p Package
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return pkgs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("importgraph: decode go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

// Module returns the workspace module of an import path, "" for none.
func Module(path string) string {
	rest, ok := strings.CutPrefix(path, Root)
	if !ok {
		return ""
	}
	m, _, _ := strings.Cut(rest, "/")
	return m
}

// Graph is one binary's import graph: nodes are import paths without Root, edges go from
// importer to imported.
type Graph struct {
	Module string
	Nodes  []string            // sorted
	Edges  map[string][]string // sorted targets; only edges a longer path does not imply
}

// Build returns the graph of module's binaries: every package of the module reachable from
// its commands (package main under cmd/) by non-test imports, and the shared modules'
// packages they reach. Edges that a longer path implies are left out (transitive reduction),
// which keeps the picture legible without changing what depends on what.
func Build(pkgs []Package, mod string) (Graph, error) {
	byPath := make(map[string]Package, len(pkgs))
	var roots []string
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
		if p.Name == "main" && Module(p.ImportPath) == mod {
			roots = append(roots, p.ImportPath)
		}
	}
	if len(roots) == 0 {
		return Graph{}, fmt.Errorf("importgraph: module %s has no command", mod)
	}
	// Reachable workspace packages and their direct workspace imports.
	direct := map[string][]string{}
	stack := slices.Clone(roots)
	for len(stack) > 0 {
		path := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, seen := direct[path]; seen {
			continue
		}
		direct[path] = []string{}
		for _, imp := range byPath[path].Imports {
			if m := Module(imp); m == mod || slices.Contains(shared, m) {
				direct[path] = append(direct[path], imp)
				stack = append(stack, imp)
			}
		}
	}
	g := Graph{Module: mod, Edges: map[string][]string{}}
	for path := range direct {
		g.Nodes = append(g.Nodes, strings.TrimPrefix(path, Root))
	}
	slices.Sort(g.Nodes)
	for from, tos := range direct {
		for _, to := range tos {
			if !impliedByLongerPath(direct, from, to) {
				f := strings.TrimPrefix(from, Root)
				g.Edges[f] = append(g.Edges[f], strings.TrimPrefix(to, Root))
			}
		}
	}
	for _, tos := range g.Edges {
		slices.Sort(tos)
	}
	return g, nil
}

// impliedByLongerPath reports whether to is reachable from from through another of from's
// direct imports. Imports form a DAG, so this is the transitive reduction.
func impliedByLongerPath(direct map[string][]string, from, to string) bool {
	for _, mid := range direct[from] {
		if mid != to && reaches(direct, mid, to, map[string]bool{}) {
			return true
		}
	}
	return false
}

func reaches(direct map[string][]string, from, to string, seen map[string]bool) bool {
	if from == to {
		return true
	}
	if seen[from] {
		return false
	}
	seen[from] = true
	for _, next := range direct[from] {
		if reaches(direct, next, to, seen) {
			return true
		}
	}
	return false
}
