package flagenv

import (
	"flag"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Flag describes a flag Bind registered for a struct field.
type Flag struct {
	// Name is the flag's name, without dashes.
	Name string
	// Field is the Go field it sets.
	Field string
	// Usage is the help text (backticks mark code, for the docs).
	Usage string
	// Default is the value it has unless set, as the flag prints it ("" for none), or the
	// described default of a field whose zero value stands for a computed one.
	Default string
	// Aliases are deprecated former names, which set the same field.
	Aliases []string
	// Bool is true for a flag that may be given without a value.
	Bool bool
}

// Bind registers on fs one flag for every exported field of the struct cfg points to, with the
// field's current value as the default, and returns them in field order. Each field's tags say
// what the flag is:
//
//	flag:"name"       the flag's name; "-" leaves the field out. Required on every exported field,
//	                  so that a new field cannot be forgotten.
//	usage:"text"      the help text, in the docs' words; or BindOptions.Usage gives it (a
//	                  struct tag cannot hold the backticks that mark code). One of them is required.
//	alias:"a,b"       deprecated former names that still set the field.
//	default:"text"    how --help and the docs describe the default of a field whose zero value
//	                  stands for a computed default (e.g. from the hostname); only on such fields.
//
// A field is a string, bool, int, int64, uint, uint64, float64, time.Duration, []string (a
// comma-separated list, blanks trimmed, empty items dropped; each setting replaces the list),
// or of a type whose pointer implements flag.Value; BindOptions.Values gives the flag.Value of a
// field by flag name when its parse is another (a size with units, say) or its type none of
// these.
func Bind(fs *flag.FlagSet, cfg any, o BindOptions) ([]Flag, error) {
	v := reflect.ValueOf(cfg)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("flagenv: Bind needs a pointer to a struct, got %T", cfg)
	}
	v = v.Elem()
	used := map[string]bool{}
	var out []Flag
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		f, ok, err := bindField(fs, sf, v.Field(i), o)
		if err != nil {
			return nil, fmt.Errorf("flagenv: %s.%s: %w", v.Type().Name(), sf.Name, err)
		}
		if ok {
			used[f.Name] = true
			out = append(out, f)
		}
	}
	for _, names := range []map[string]bool{keys(o.Values), keys(o.Usage)} {
		for name := range names {
			if !used[name] {
				return nil, fmt.Errorf("flagenv: BindOptions name --%s, which no field of %s declares", name, v.Type().Name())
			}
		}
	}
	return out, nil
}

// BindOptions complete the fields' tags.
type BindOptions struct {
	// Usage gives the help text of the flags, by name, whose fields have no usage tag.
	Usage map[string]string
	// Values gives the flag.Value of the flags, by name, whose parse is not their field type's.
	Values map[string]flag.Value
}

func keys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// bindField registers the flag of one field; ok is false for a field left out (flag:"-").
func bindField(fs *flag.FlagSet, sf reflect.StructField, fv reflect.Value, o BindOptions) (Flag, bool, error) {
	name, tagged := sf.Tag.Lookup("flag")
	switch {
	case !tagged:
		return Flag{}, false, fmt.Errorf(`no flag tag (flag:"-" leaves a field out)`)
	case name == "-":
		return Flag{}, false, nil
	}
	usage, tagged := sf.Tag.Lookup("usage")
	switch {
	case tagged && o.Usage[name] != "":
		return Flag{}, false, fmt.Errorf("--%s has a usage tag and a BindOptions.Usage text", name)
	case !tagged:
		usage = o.Usage[name]
	}
	if usage == "" {
		return Flag{}, false, fmt.Errorf("--%s has no usage text (a usage tag or BindOptions.Usage)", name)
	}
	value := o.Values[name]
	if value == nil {
		var err error
		if value, err = valueOf(fv); err != nil {
			return Flag{}, false, fmt.Errorf("--%s: %w", name, err)
		}
	}
	fs.Var(value, name, plain(usage))
	f := Flag{Name: name, Field: sf.Name, Usage: usage, Default: fs.Lookup(name).DefValue, Bool: isBool(fs.Lookup(name))}
	if d, ok := sf.Tag.Lookup("default"); ok {
		if f.Default != "" {
			return Flag{}, false, fmt.Errorf(
				`--%s: a default tag describes a computed default; this field's is %q`,
				name,
				f.Default,
			)
		}
		f.Default = d
	}
	if a := sf.Tag.Get("alias"); a != "" {
		for _, alias := range strings.Split(a, ",") {
			alias = strings.TrimSpace(alias)
			fs.Var(&aliasValue{Value: value, of: name}, alias, "deprecated: use --"+name)
			f.Aliases = append(f.Aliases, alias)
		}
	}
	return f, true, nil
}

// valueOf returns the flag.Value that parses into fv.
func valueOf(fv reflect.Value) (flag.Value, error) {
	p := fv.Addr().Interface()
	if v, ok := p.(flag.Value); ok {
		return v, nil
	}
	switch p := p.(type) {
	case *string:
		return (*stringValue)(p), nil
	case *bool:
		return (*boolValue)(p), nil
	case *time.Duration:
		return (*durationValue)(p), nil
	case *int, *int64, *uint, *uint64, *float64:
		return numberValue{p: fv}, nil
	case *[]string:
		return (*listValue)(p), nil
	}
	return nil, fmt.Errorf("unsupported type %s: give its flag.Value", fv.Type())
}

// aliasValue is a deprecated name's value: the flag's own, remembered as standing for it.
type aliasValue struct {
	flag.Value
	of string
}

// IsBoolFlag lets a bool flag's alias stand alone too.
func (a *aliasValue) IsBoolFlag() bool {
	b, ok := a.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// canonical returns the name f stands for: its own, or, for a deprecated alias, the flag's.
func canonical(f *flag.Flag) string {
	if a, ok := f.Value.(*aliasValue); ok {
		return a.of
	}
	return f.Name
}

// plain drops the backticks that mark code in a usage text, for --help.
func plain(usage string) string { return strings.ReplaceAll(usage, "`", "") }
