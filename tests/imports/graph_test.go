package imports

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/harness"
	"github.com/switchyard-dev/switchyard/tests/importgraph"
)

// TestArchitectureGraphCurrent fails when the import graphs committed in docs/architecture.md
// differ from what `go list` says of the code now; `make generate` (or
// `go run ./tests/cmd/importgraph`) rewrites them.
func TestArchitectureGraphCurrent(t *testing.T) {
	root, err := harness.WorkspaceRoot()
	if err != nil {
		t.Fatal(err)
	}
	const file = "docs/architecture.md"
	doc, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := importgraph.Load(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	graphs, err := importgraph.Render(pkgs)
	if err != nil {
		t.Fatal(err)
	}
	updated, err := importgraph.Update(doc, graphs)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if string(updated) != string(doc) {
		t.Errorf("%s: the import graph is out of date; run 'make generate' "+
			"(or 'go run ./tests/cmd/importgraph') and commit", file)
	}
}
