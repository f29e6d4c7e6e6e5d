package deploy_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// tfEval evaluates a module's expressions the way Terraform plans them, for the parts the checks
// read: variables (types with optional defaults, then validations), locals, and the arguments and
// preconditions of resources. Resources, data sources and other modules are unknown values, so
// only what follows from the variables is known.
type tfEval struct {
	m    *tfModule
	vars map[string]cty.Value
	ctx  *hcl.EvalContext
}

// evalModule sets the module's variables from inputs (defaults for the rest) and evaluates its
// locals. The error lists every variable that fails its type or its validations, with the
// validation's error_message.
func evalModule(t *testing.T, m *tfModule, inputs map[string]cty.Value) (*tfEval, error) {
	t.Helper()
	e := &tfEval{m: m, vars: map[string]cty.Value{}}
	var errs []error
	for _, b := range m.blocks {
		if b.Type != "variable" {
			continue
		}
		v, err := variableValue(b, inputs)
		if err != nil {
			errs = append(errs, err)
			v = cty.DynamicVal
		}
		e.vars[b.Labels[0]] = v
	}
	for name := range inputs {
		if _, ok := m.variables[name]; !ok {
			t.Fatalf("%s has no variable %q", m.dir, name)
		}
	}
	e.ctx = &hcl.EvalContext{Variables: e.unknownRoots(), Functions: tfFunctions()}
	e.ctx.Variables["var"] = cty.ObjectVal(e.vars)
	e.ctx.Variables["path"] = cty.ObjectVal(
		map[string]cty.Value{"module": cty.StringVal(m.dir), "root": cty.StringVal(m.dir)},
	)
	for _, b := range m.blocks {
		if b.Type == "variable" {
			errs = append(errs, e.validations(b)...)
		}
	}
	if len(errs) > 0 {
		return e, errors.Join(errs...) // Terraform stops here too
	}
	e.evalLocals(t)
	return e, nil
}

// variableValue converts the input (or the default) to the variable's type, filling optional
// attributes' defaults as Terraform does.
func variableValue(b *hclsyntax.Block, inputs map[string]cty.Value) (cty.Value, error) {
	name := b.Labels[0]
	v, given := inputs[name]
	if def, ok := b.Body.Attributes["default"]; !given && ok {
		dv, diags := def.Expr.Value(nil)
		if diags.HasErrors() {
			return cty.NilVal, fmt.Errorf("variable %s: default: %s", name, diags.Error())
		}
		v, given = dv, true
	}
	if !given {
		return cty.NilVal, fmt.Errorf("variable %s: required but not given", name)
	}
	typ := b.Body.Attributes["type"]
	ty, defaults, diags := typeexpr.TypeConstraintWithDefaults(typ.Expr)
	if diags.HasErrors() {
		return cty.NilVal, fmt.Errorf("variable %s: type: %s", name, diags.Error())
	}
	if defaults != nil {
		v = defaults.Apply(v)
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		return cty.NilVal, fmt.Errorf("variable %s: %w", name, err)
	}
	return cv, nil
}

// validations evaluates the variable's validation blocks and returns their error messages.
func (e *tfEval) validations(b *hclsyntax.Block) []error {
	var errs []error
	for _, v := range b.Body.Blocks {
		if v.Type == "validation" {
			if err := e.check(v, "var."+b.Labels[0]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// check evaluates a validation, precondition or postcondition block: an error carrying its
// error_message when the condition is false or cannot be evaluated.
func (e *tfEval) check(b *hclsyntax.Block, what string) error {
	cond, diags := b.Body.Attributes["condition"].Expr.Value(e.ctx)
	if diags.HasErrors() {
		return fmt.Errorf("%s: condition: %s", what, diags.Error())
	}
	if !cond.IsKnown() || cond.True() {
		return nil // an unknown condition is checked at apply
	}
	msg, _ := b.Body.Attributes["error_message"].Expr.Value(e.ctx)
	if msg.IsKnown() && msg.Type() == cty.String {
		return fmt.Errorf("%s: %s", what, msg.AsString())
	}
	return fmt.Errorf("%s: condition is false", what)
}

// unknownRoots gives every root name the module refers to, other than var, local and path, an
// unknown value: resources, data sources and modules are known only after apply.
func (e *tfEval) unknownRoots() map[string]cty.Value {
	roots := map[string]cty.Value{}
	for _, tr := range e.m.refs {
		switch name := tr.RootName(); name {
		case "var", "local", "path", "each", "count", "self":
		default:
			roots[name] = cty.DynamicVal
		}
	}
	return roots
}

// evalLocals evaluates the locals in dependency order, by passes until none changes.
func (e *tfEval) evalLocals(t *testing.T) {
	t.Helper()
	exprs := map[string]hclsyntax.Expression{}
	for _, b := range e.m.blocks {
		if b.Type == "locals" {
			for name, a := range b.Body.Attributes {
				exprs[name] = a.Expr
			}
		}
	}
	locals := map[string]cty.Value{}
	var last hcl.Diagnostics
	for len(locals) < len(exprs) {
		e.ctx.Variables["local"] = cty.ObjectVal(locals)
		progress := false
		last = nil
		for name, expr := range exprs {
			if _, done := locals[name]; done {
				continue
			}
			v, diags := expr.Value(e.ctx)
			if diags.HasErrors() {
				last = append(last, diags...)
				continue
			}
			locals[name], progress = v, true
		}
		if !progress {
			t.Fatalf("%s: locals cannot be evaluated: %s", e.m.dir, last.Error())
		}
	}
	e.ctx.Variables["local"] = cty.ObjectVal(locals)
}

// block returns the module's resource (or data) block typ.name.
func (e *tfEval) block(t *testing.T, kind, typ, name string) *hclsyntax.Block {
	t.Helper()
	for _, b := range e.m.blocks {
		if b.Type == kind && len(b.Labels) == 2 && b.Labels[0] == typ && b.Labels[1] == name {
			return b
		}
	}
	t.Fatalf("%s has no %s %s.%s", e.m.dir, kind, typ, name)
	return nil
}

// attr evaluates an argument of resource typ.name; each, when not null, is the for_each element
// as each.key and each.value.
func (e *tfEval) attr(t *testing.T, typ, name, attr string, each map[string]cty.Value) cty.Value {
	t.Helper()
	a, ok := e.block(t, "resource", typ, name).Body.Attributes[attr]
	if !ok {
		t.Fatalf("%s.%s has no argument %s", typ, name, attr)
	}
	v, diags := a.Expr.Value(e.withEach(each))
	if diags.HasErrors() {
		t.Fatalf("%s.%s.%s: %s", typ, name, attr, diags.Error())
	}
	return v
}

// preconditions evaluates the lifecycle preconditions of resource typ.name.
func (e *tfEval) preconditions(t *testing.T, typ, name string, each map[string]cty.Value) error {
	t.Helper()
	saved := e.ctx
	e.ctx = e.withEach(each)
	defer func() { e.ctx = saved }()
	var errs []error
	for _, lc := range e.block(t, "resource", typ, name).Body.Blocks {
		for _, pc := range lc.Body.Blocks {
			if lc.Type == "lifecycle" && pc.Type == "precondition" {
				if err := e.check(pc, typ+"."+name); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (e *tfEval) withEach(each map[string]cty.Value) *hcl.EvalContext {
	if each == nil {
		return e.ctx
	}
	ctx := e.ctx.NewChild()
	ctx.Variables = map[string]cty.Value{"each": cty.ObjectVal(each)}
	return ctx
}

// tfFunctions are the Terraform functions the modules use, with Terraform's behaviour for the
// arguments they get. A module calling any other function fails evaluation with "Call to unknown
// function": add it here.
func tfFunctions() map[string]function.Function {
	return map[string]function.Function{
		"alltrue":      boolsFunc(true),
		"anytrue":      boolsFunc(false),
		"base64decode": base64DecodeFunc,
		"can":          tryfunc.CanFunc,
		"cidrhost":     cidrHostFunc,
		"concat":       stdlib.ConcatFunc,
		"contains":     stdlib.ContainsFunc,
		"distinct":     stdlib.DistinctFunc,
		"join":         stdlib.JoinFunc,
		"length":       lengthFunc,
		"lower":        stdlib.LowerFunc,
		"merge":        stdlib.MergeFunc,
		"one":          oneFunc,
		"regex":        stdlib.RegexFunc,
		"slice":        stdlib.SliceFunc,
		"split":        stdlib.SplitFunc,
		"startswith":   stringTestFunc(strings.HasPrefix),
		"strcontains":  stringTestFunc(strings.Contains),
		"tonumber":     convertFunc(cty.Number),
		"tostring":     convertFunc(cty.String),
		"trimspace":    stdlib.TrimSpaceFunc,
		"trimsuffix":   stdlib.TrimSuffixFunc,
		"try":          tryfunc.TryFunc,
		"values":       stdlib.ValuesFunc,
		"yamlencode":   yamlEncodeFunc,
	}
}

var anyParam = function.Parameter{Name: "v", Type: cty.DynamicPseudoType, AllowNull: true}

// lengthFunc counts a string's characters or a collection's elements.
var lengthFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType}},
	Type:   function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if args[0].Type() == cty.String {
			return stdlib.Strlen(args[0])
		}
		return stdlib.Length(args[0])
	},
})

// boolsFunc is alltrue (all) or anytrue (!all) over a list of bools.
func boolsFunc(all bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "list", Type: cty.List(cty.Bool)}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			for it := args[0].ElementIterator(); it.Next(); {
				_, v := it.Element()
				if !v.IsKnown() {
					return cty.UnknownVal(cty.Bool), nil
				}
				if v.True() != all {
					return cty.BoolVal(!all), nil
				}
			}
			return cty.BoolVal(all), nil
		},
	})
}

func stringTestFunc(f func(s, sub string) bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "s", Type: cty.String}, {Name: "sub", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.BoolVal(f(args[0].AsString(), args[1].AsString())), nil
		},
	})
}

func convertFunc(ty cty.Type) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{anyParam},
		Type:   function.StaticReturnType(ty),
		Impl:   func(args []cty.Value, _ cty.Type) (cty.Value, error) { return convert.Convert(args[0], ty) },
	})
}

// oneFunc returns the only element of a list, or null for an empty one.
var oneFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "list", Type: cty.DynamicPseudoType}},
	Type:   func([]cty.Value) (cty.Type, error) { return cty.DynamicPseudoType, nil },
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		switch n := args[0].LengthInt(); n {
		case 0:
			return cty.NullVal(cty.DynamicPseudoType), nil
		case 1:
			return args[0].Index(cty.NumberIntVal(0)), nil
		default:
			return cty.NilVal, fmt.Errorf("one: %d elements", n)
		}
	},
})

var base64DecodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "s", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		b, err := base64.StdEncoding.DecodeString(args[0].AsString())
		return cty.StringVal(string(b)), err
	},
})

// cidrHostFunc is cidrhost for IPv4 prefixes.
var cidrHostFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "prefix", Type: cty.String}, {Name: "hostnum", Type: cty.Number}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := netip.ParsePrefix(args[0].AsString())
		if err != nil || !p.Addr().Is4() {
			return cty.NilVal, fmt.Errorf("cidrhost: invalid IPv4 prefix %q", args[0].AsString())
		}
		n, _ := args[1].AsBigFloat().Int64()
		if n < 0 || big.NewInt(n).BitLen() > 32-p.Bits() {
			return cty.NilVal, fmt.Errorf("cidrhost: host number %d out of range", n)
		}
		b := p.Masked().Addr().As4()
		v := (uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])) + uint32(n)
		return cty.StringVal(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).String()), nil
	},
})

// yamlEncodeFunc writes JSON, which is YAML, so Helm reads it as Terraform's yamlencode output.
var yamlEncodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{anyParam},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if !args[0].IsWhollyKnown() {
			return cty.UnknownVal(cty.String), nil
		}
		b, err := ctyjson.Marshal(args[0], args[0].Type())
		return cty.StringVal(string(b)), err
	},
})

// output evaluates the module's output name.
func (e *tfEval) output(t *testing.T, name string) cty.Value {
	t.Helper()
	for _, b := range e.m.blocks {
		if b.Type == "output" && b.Labels[0] == name {
			v, diags := b.Body.Attributes["value"].Expr.Value(e.ctx)
			if diags.HasErrors() {
				t.Fatalf("output %s: %s", name, diags.Error())
			}
			return v
		}
	}
	t.Fatalf("%s has no output %s", e.m.dir, name)
	return cty.NilVal
}
