// Command importgraph writes the import graph of each Switchyard binary, generated from
// `go list`, between its markers in docs/architecture.md (`make generate` runs it):
//
//	go run ./tests/cmd/importgraph               # rewrite the graphs in place
//	go run ./tests/cmd/importgraph --check       # exit 1 when the committed graphs are stale
//
// It runs from anywhere inside the workspace; --file is relative to the workspace root.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/switchyard-dev/switchyard/tests/importgraph"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("importgraph", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("file", "docs/architecture.md",
		"Markdown file with the graph markers, relative to the workspace root")
	check := fs.Bool("check", false, "do not write; exit 1 when the file's graphs differ from the code's")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	root, err := workspaceRoot(ctx)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	path := filepath.Join(root, *file)
	doc, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(stderr, "importgraph:", err)
		return 1
	}
	pkgs, err := importgraph.Load(ctx, root)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	graphs, err := importgraph.Render(pkgs)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	updated, err := importgraph.Update(doc, graphs)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", *file, err)
		return 1
	}
	switch {
	case bytes.Equal(doc, updated):
		return 0
	case *check:
		fmt.Fprintf(stderr, "%s: the import graph is out of date; run 'make generate' and commit\n", *file)
		return 1
	}
	if err := os.WriteFile(path, updated, 0o644); err != nil {
		fmt.Fprintln(stderr, "importgraph:", err)
		return 1
	}
	fmt.Fprintf(stdout, "importgraph: updated %s\n", *file)
	return 0
}

// workspaceRoot is the directory of the go.work file in force.
func workspaceRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOWORK").Output()
	if err != nil {
		return "", fmt.Errorf("importgraph: go env GOWORK: %w", err)
	}
	w := strings.TrimSpace(string(out))
	if w == "" || w == "off" {
		return "", fmt.Errorf("importgraph: not inside the Switchyard Go workspace")
	}
	return filepath.Dir(w), nil
}
