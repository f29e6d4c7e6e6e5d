package apierror

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/contract"
)

// The gateway's error constructors answer with codes that are gateway error reasons.
func TestErrorCodesAreReasons(t *testing.T) {
	tests := []struct {
		name string
		e    *Error
		want contract.Reason
	}{
		{"bad request", BadRequest("m", "p"), contract.ReasonInvalidRequest},
		{"model not found", ModelNotFound("m"), contract.ReasonModelNotFound},
		{"too large", TooLarge(1), contract.ReasonRequestTooLarge},
		{"unavailable", Unavailable("m", 1), contract.ReasonNoCapacity},
		{"overloaded", Overloaded("m", 1), contract.ReasonOverloaded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.e.Code != tt.want || tt.e.Code.Uses()&contract.UseGatewayError == 0 {
				t.Fatalf("code %q, want %q, a gateway error reason", tt.e.Code, tt.want)
			}
		})
	}
}

// TestErrorLiteralsAreReasons checks every Error literal in the module: a Code spelled as a
// string literal (an untyped constant becomes a contract.Reason unchecked) must be a gateway
// error reason.
func TestErrorLiteralsAreReasons(t *testing.T) {
	n := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(node ast.Node) bool {
			kv, ok := node.(*ast.KeyValueExpr)
			if !ok {
				return true
			}
			key, ok := kv.Key.(*ast.Ident)
			lit, isLit := kv.Value.(*ast.BasicLit)
			if !ok || key.Name != "Code" || !isLit || lit.Kind != token.STRING {
				return true
			}
			v, _ := strconv.Unquote(lit.Value)
			n++
			if r, err := contract.ParseReason(v); err != nil || r.Uses()&contract.UseGatewayError == 0 {
				t.Errorf("%s: Code %q is not a gateway error reason (contract.Reasons(contract.UseGatewayError))", path, v)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d error literals with a string code", n)
}
