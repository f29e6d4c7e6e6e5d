package contract_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestHeadersDocumented checks that docs/contract.md lists every header constant of headers.go,
// so the page cannot fall behind the code.
func TestHeadersDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/contract.md")
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "headers.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Header") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					continue
				}
				v, _ := strconv.Unquote(lit.Value)
				n++
				if !strings.Contains(string(doc), "| `"+v+"` |") {
					t.Errorf("%s (%s) is not in docs/contract.md's header table", name.Name, v)
				}
			}
		}
	}
	if n < 14 {
		t.Fatalf("found %d header constants, want at least 14", n)
	}
}
