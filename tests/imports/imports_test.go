// Package imports checks the workspace's import rules over `go list` output: the two binaries
// share only the contract, gossip, proto and telemetry modules; contract imports only the standard
// library; the leaves never import the binaries; nothing imports tests; and inside a binary no
// package imports a sibling at its own layer (the front doors, the plugins).
package imports

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/harness"
	"github.com/switchyard-dev/switchyard/tests/importgraph"
)

const root = importgraph.Root

// pkg is the part of `go list -json` the rules read.
type pkg struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

// listWorkspace returns every package of the workspace's modules, tests' imports included.
func listWorkspace(t *testing.T) []pkg {
	t.Helper()
	dir, err := harness.WorkspaceRoot()
	if err != nil {
		t.Fatal(err)
	}
	// -pgo=off: with a main package's default.pgo, go list reports the packages that binary
	// builds as variants of their own ("app [.../cmd/cluster-gateway]"); imports are the same.
	args := []string{"list", "-pgo=off", "-json=ImportPath,Imports,TestImports,XTestImports,Standard"}
	for _, m := range []string{"contract", "proto", "gossip", "telemetry", "cluster-gateway", "global-router", "tests"} {
		args = append(args, "./"+m+"/...")
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			pkg
			TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		p.Imports = append(append(p.Imports, p.TestImports...), p.XTestImports...)
		pkgs = append(pkgs, p.pkg)
	}
	if len(pkgs) < 50 {
		t.Fatalf("go list found %d packages; the workspace has far more", len(pkgs))
	}
	return pkgs
}

// allowed lists, for each module, the workspace modules it may import besides itself.
var allowed = map[string][]string{
	"contract":        {},
	"proto":           {},
	"gossip":          {"contract", "proto"},
	"telemetry":       {},
	"cluster-gateway": {"contract", "gossip", "proto", "telemetry"},
	"global-router":   {"contract", "gossip", "proto", "telemetry"},
	"tests":           {"contract", "proto", "gossip", "telemetry", "cluster-gateway", "global-router"},
}

func TestModuleBoundaries(t *testing.T) {
	for _, p := range listWorkspace(t) {
		from := importgraph.Module(p.ImportPath)
		for _, imp := range p.Imports {
			to := importgraph.Module(imp)
			if to == "" || to == from {
				continue
			}
			ok := false
			for _, a := range allowed[from] {
				ok = ok || a == to
			}
			if !ok {
				t.Errorf("%s imports %s: module %s may import only %v", p.ImportPath, imp, from, allowed[from])
			}
		}
	}
}

// TestContractIsALeaf checks that contract imports nothing outside the standard library (its
// own packages aside), so either tier can take it without taking a dependency.
func TestContractIsALeaf(t *testing.T) {
	for _, p := range listWorkspace(t) {
		if importgraph.Module(p.ImportPath) != "contract" {
			continue
		}
		for _, imp := range p.Imports {
			if importgraph.Module(imp) != "contract" && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				t.Errorf("%s imports %s, outside the standard library", p.ImportPath, imp)
			}
		}
	}
}

// layers are the groups of sibling packages that must not import each other: a sibling is a
// peer, and what two peers share belongs in a package below them.
var layers = [][]string{
	{"cluster-gateway/internal/proxy", "cluster-gateway/internal/extproc"},
	{"cluster-gateway/internal/plugins/"},
	{"global-router/internal/frontdoor", "global-router/internal/admin"},
}

// knownSiblingImports are the sibling imports the code still has, each to be removed; the test
// fails on any other, and on these once they are gone (so the list is kept true).
var knownSiblingImports = map[string]string{
	"cluster-gateway/internal/plugins/giecompat -> cluster-gateway/internal/plugins/maxscore": "test only",
}

func TestNoSiblingImports(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range listWorkspace(t) {
		from := strings.TrimPrefix(p.ImportPath, root)
		for _, imp := range p.Imports {
			to := strings.TrimPrefix(imp, root)
			if to == imp || !siblings(from, to) {
				continue
			}
			edge := from + " -> " + to
			if _, known := knownSiblingImports[edge]; known {
				seen[edge] = true
				continue
			}
			t.Errorf("%s imports its sibling %s", from, to)
		}
	}
	for edge := range knownSiblingImports {
		if !seen[edge] {
			t.Errorf("%s is gone: remove it from knownSiblingImports", edge)
		}
	}
}

// siblings reports whether a and b are different members of one layer. Test-helper packages
// (named *test, such as plugintest or admintest) are shared by their layer and do not count.
func siblings(a, b string) bool {
	if strings.HasSuffix(a, "test") || strings.HasSuffix(b, "test") {
		return false
	}
	for _, layer := range layers {
		ia, ib := member(layer, a), member(layer, b)
		if ia != "" && ib != "" && ia != ib {
			return true
		}
	}
	return false
}

// member returns the layer member that path is (or is inside), "" for none.
func member(layer []string, path string) string {
	for _, m := range layer {
		if strings.HasSuffix(m, "/") {
			if rest, ok := strings.CutPrefix(path, m); ok {
				name, _, _ := strings.Cut(rest, "/")
				return m + name
			}
			continue
		}
		if path == m || strings.HasPrefix(path, m+"/") {
			return m
		}
	}
	return ""
}
