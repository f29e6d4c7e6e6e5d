package deploy_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// tfModule is what the checks need from one Terraform module directory.
type tfModule struct {
	dir       string
	variables map[string]bool // name → required (no default)
	locals    map[string]bool
	outputs   map[string]bool
	providers map[string]string // local name → version constraint
	calls     []tfCall
	used      map[string]hcl.Range // provider local names used by resources, data sources and provider blocks
	refs      []hcl.Traversal
	blocks    []*hclsyntax.Block
}

type tfCall struct {
	name, source string
	inputs       map[string]hcl.Range
	rng          hcl.Range
}

var moduleMetaArgs = map[string]bool{
	"source":     true,
	"version":    true,
	"providers":  true,
	"count":      true,
	"for_each":   true,
	"depends_on": true,
}

// tfDirs lists every directory under terraform/ holding .tf files.
func tfDirs(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(repoPath(t, "terraform"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".tf") {
			seen[filepath.Dir(path)] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for d := range seen {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	if len(dirs) < 3 {
		t.Fatalf("want the region, global and example modules, found %v", dirs)
	}
	return dirs
}

// loadModule parses every .tf file of dir with hclsyntax and collects declarations and references.
func loadModule(t *testing.T, dir string) *tfModule {
	t.Helper()
	m := &tfModule{dir: dir, variables: map[string]bool{}, locals: map[string]bool{}, outputs: map[string]bool{},
		providers: map[string]string{}, used: map[string]hcl.Range{}}
	files, _ := filepath.Glob(filepath.Join(dir, "*.tf"))
	for _, f := range files {
		src := readFile(t, f)
		if got := hclwrite.Format(src); !bytes.Equal(got, src) {
			t.Errorf("%s is not canonically formatted (terraform fmt)", f)
		}
		file, diags := hclsyntax.ParseConfig(src, f, hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("parse %s: %v", f, diags)
		}
		for _, b := range file.Body.(*hclsyntax.Body).Blocks {
			m.addBlock(t, b)
		}
	}
	return m
}

func (m *tfModule) addBlock(t *testing.T, b *hclsyntax.Block) {
	m.blocks = append(m.blocks, b)
	m.collectRefs(b.Body)
	switch b.Type {
	case "variable":
		_, hasDefault := b.Body.Attributes["default"]
		m.variables[b.Labels[0]] = !hasDefault
		if _, ok := b.Body.Attributes["description"]; !ok {
			t.Errorf("%s: variable %s has no description", b.Range(), b.Labels[0])
		}
		if _, ok := b.Body.Attributes["type"]; !ok {
			t.Errorf("%s: variable %s has no type", b.Range(), b.Labels[0])
		}
	case "locals":
		for name := range b.Body.Attributes {
			m.locals[name] = true
		}
	case "output":
		m.outputs[b.Labels[0]] = true
	case "module":
		c := tfCall{name: b.Labels[0], inputs: map[string]hcl.Range{}, rng: b.Range()}
		for name, a := range b.Body.Attributes {
			if name == "source" {
				v, _ := a.Expr.Value(nil)
				c.source = v.AsString()
			} else if !moduleMetaArgs[name] {
				c.inputs[name] = a.Range()
			}
			if name == "providers" {
				m.addProviderMap(a)
			}
		}
		m.calls = append(m.calls, c)
	case "resource", "data":
		name := b.Labels[0]
		if p, ok := b.Body.Attributes["provider"]; ok {
			name = hcl.ExprAsKeyword(p.Expr)
			if tr, diags := hcl.AbsTraversalForExpr(p.Expr); !diags.HasErrors() {
				name = tr.RootName()
			}
		} else {
			name, _, _ = strings.Cut(name, "_")
		}
		m.used[name] = b.Range()
	case "provider":
		m.used[b.Labels[0]] = b.Range()
	case "terraform":
		for _, inner := range b.Body.Blocks {
			if inner.Type != "required_providers" {
				continue
			}
			for name, a := range inner.Body.Attributes {
				m.providers[name] = requiredVersion(a.Expr)
			}
		}
	}
}

// requiredVersion returns the version of a required_providers entry ({source = ..., version = ...}).
func requiredVersion(expr hclsyntax.Expression) string {
	obj, ok := expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return ""
	}
	for _, item := range obj.Items {
		if hcl.ExprAsKeyword(item.KeyExpr) != "version" {
			continue
		}
		if v, diags := item.ValueExpr.Value(nil); !diags.HasErrors() && v.Type() == cty.String {
			return v.AsString()
		}
	}
	return ""
}

// addProviderMap records the providers a module call passes, e.g. {aws = aws.use1}.
func (m *tfModule) addProviderMap(a *hclsyntax.Attribute) {
	obj, ok := a.Expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return
	}
	for _, item := range obj.Items {
		if tr, diags := hcl.AbsTraversalForExpr(item.ValueExpr); !diags.HasErrors() {
			m.used[tr.RootName()] = a.Range()
		}
	}
}

func (m *tfModule) collectRefs(body *hclsyntax.Body) {
	for _, a := range body.Attributes {
		m.refs = append(m.refs, a.Expr.Variables()...)
	}
	for _, b := range body.Blocks {
		m.collectRefs(b.Body)
	}
}

// attrName returns the name of a traversal's step i when it is an attribute access.
func attrName(tr hcl.Traversal, i int) string {
	if i >= len(tr) {
		return ""
	}
	if a, ok := tr[i].(hcl.TraverseAttr); ok {
		return a.Name
	}
	return ""
}

func TestTerraformModules(t *testing.T) {
	modules := map[string]*tfModule{}
	for _, dir := range tfDirs(t) {
		modules[dir] = loadModule(t, dir)
	}
	for dir, m := range modules {
		rel, _ := filepath.Rel(repoPath(t, "terraform"), dir)
		t.Run(rel, func(t *testing.T) {
			checkReferences(t, m, modules)
			checkModuleCalls(t, m, modules)
			checkProviders(t, m)
		})
	}
}

func checkReferences(t reporter, m *tfModule, modules map[string]*tfModule) {
	t.Helper()
	calls := map[string]tfCall{}
	for _, c := range m.calls {
		calls[c.name] = c
	}
	for _, tr := range m.refs {
		name := attrName(tr, 1)
		switch tr.RootName() {
		case "var":
			if _, ok := m.variables[name]; !ok {
				t.Errorf("%s: var.%s is not declared", tr.SourceRange(), name)
			}
		case "local":
			if !m.locals[name] {
				t.Errorf("%s: local.%s is not declared", tr.SourceRange(), name)
			}
		case "module":
			c, ok := calls[name]
			if !ok {
				t.Errorf("%s: module.%s is not declared", tr.SourceRange(), name)
				continue
			}
			callee := modules[filepath.Clean(filepath.Join(m.dir, c.source))]
			if callee == nil {
				continue // a registry module: its outputs are not checked here
			}
			if out := attrName(tr, 2); out != "" && !callee.outputs[out] {
				t.Errorf("%s: module.%s has no output %q", tr.SourceRange(), name, out)
			}
		}
	}
}

func checkModuleCalls(t reporter, m *tfModule, modules map[string]*tfModule) {
	t.Helper()
	for _, c := range m.calls {
		if !strings.HasPrefix(c.source, "./") && !strings.HasPrefix(c.source, "../") {
			if !hasVersion(m, c) {
				t.Errorf("%s: registry module %s has no version", c.rng, c.source)
			}
			continue
		}
		callee := modules[filepath.Clean(filepath.Join(m.dir, c.source))]
		if callee == nil {
			t.Errorf("%s: module %s: source %s has no .tf files", c.rng, c.name, c.source)
			continue
		}
		for in, rng := range c.inputs {
			if _, ok := callee.variables[in]; !ok {
				t.Errorf("%s: module %s has no variable %q", rng, c.name, in)
			}
		}
		for v, required := range callee.variables {
			if _, given := c.inputs[v]; required && !given {
				t.Errorf("%s: module %s: required variable %q not given", c.rng, c.name, v)
			}
		}
	}
}

func hasVersion(m *tfModule, c tfCall) bool {
	for _, b := range m.blocks {
		if b.Type == "module" && b.Labels[0] == c.name {
			_, ok := b.Body.Attributes["version"]
			return ok
		}
	}
	return false
}

func checkProviders(t reporter, m *tfModule) {
	t.Helper()
	if len(m.providers) == 0 {
		t.Errorf("%s: no required_providers", m.dir)
	}
	for name, rng := range m.used {
		if name == "terraform" {
			continue
		}
		if v, ok := m.providers[name]; !ok {
			t.Errorf("%s: provider %q is not in required_providers", rng, name)
		} else if strings.TrimSpace(v) == "" {
			t.Errorf("%s: provider %q has no version constraint", m.dir, name)
		}
	}
	for name, v := range m.providers {
		if v == "" {
			t.Errorf("%s: required provider %q has no version constraint", m.dir, name)
		}
	}
}

var modulePath = regexp.MustCompile(`\$\{path\.module\}(/[A-Za-z0-9_./-]+)`)

// TestTerraformPathsExist checks every ${path.module}/... path in the Terraform files exists, such
// as the chart directory the region module installs.
func TestTerraformPathsExist(t *testing.T) {
	n := 0
	for _, dir := range tfDirs(t) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.tf"))
		for _, f := range files {
			for _, m := range modulePath.FindAllStringSubmatch(string(readFile(t, f)), -1) {
				n++
				if _, err := os.Stat(filepath.Join(dir, m[1])); err != nil {
					t.Errorf("%s: %s does not exist: %v", f, m[0], err)
				}
			}
		}
	}
	if n == 0 {
		t.Error("no ${path.module} paths found; the region module should point at deploy/charts")
	}
}

// TestTerraformVariablesValidated wants a validation block on every variable of the reusable
// modules that has no safe default or takes a constrained value.
func TestTerraformVariablesValidated(t *testing.T) {
	for _, dir := range tfDirs(t) {
		if !strings.Contains(filepath.ToSlash(dir), "/modules/") {
			continue
		}
		m := loadModule(t, dir)
		validated := 0
		for _, b := range m.blocks {
			if b.Type != "variable" {
				continue
			}
			for _, inner := range b.Body.Blocks {
				if inner.Type == "validation" {
					validated++
					break
				}
			}
		}
		if n := len(m.variables); validated*2 < n {
			t.Errorf("%s: only %d of %d variables are validated", dir, validated, n)
		}
	}
}

// reporter is the part of testing.T the checks use, so a test can run them on a broken module.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

type collect struct{ errs []string }

func (c *collect) Helper() {}
func (c *collect) Errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

// TestTerraformChecksCatchMistakes runs the checks on a broken module so they are known to fail.
func TestTerraformChecksCatchMistakes(t *testing.T) {
	dir := t.TempDir()
	src := "terraform {\n  required_providers {\n    aws = { source = \"hashicorp/aws\" }\n  }\n}\n\n" +
		"resource \"random_id\" \"x\" {\n  byte_length = var.missing\n  keepers     = { a = local.nope }\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	m := loadModule(t, dir)
	var c collect
	checkReferences(&c, m, map[string]*tfModule{dir: m})
	checkProviders(&c, m)
	all := strings.Join(c.errs, "\n")
	for _, want := range []string{"var.missing", "local.nope", `provider "random"`, `"aws" has no version`} {
		if !strings.Contains(all, want) {
			t.Errorf("no error mentions %s; got:\n%s", want, all)
		}
	}
}
