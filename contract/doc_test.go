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
	headers := headerValues(t)
	for v, name := range headers {
		if !strings.Contains(string(doc), "| `"+v+"` |") {
			t.Errorf("%s (%s) is not in docs/contract.md's header table", name, v)
		}
	}
	if len(headers) < 14 {
		t.Fatalf("found %d header constants, want at least 14", len(headers))
	}
}

// headerValues maps the value of every Header constant of headers.go to the constant's name.
func headerValues(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "headers.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i >= len(vs.Values) || !strings.HasPrefix(name.Name, "Header") {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
					v, _ := strconv.Unquote(lit.Value)
					out[v] = name.Name
				}
			}
		}
	}
	return out
}
