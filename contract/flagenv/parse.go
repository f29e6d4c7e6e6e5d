// Package flagenv reads a command's flags from the command line, from SWITCHYARD_<FLAG>
// environment variables and from an optional file of flag values, in that order of precedence,
// and binds them to one Config struct whose field tags carry each flag's name and help text, so
// that --help and the generated flags tables of the docs come from the struct itself.
//
// Every Switchyard command reads its flags through Parse, so the environment variable of a flag
// is named the same way everywhere: the prefix, an underscore, and the flag's name in upper case
// with dashes as underscores (--ext-proc-listen is SWITCHYARD_EXT_PROC_LISTEN). A variable that is
// unset or empty leaves the flag alone; variables that name no flag are ignored.
//
// # File format
//
// The file named by the file flag (Options.FileFlag) holds one flag a line, written as on the
// command line without the dashes, or with them:
//
//	# the gateway's identity
//	cluster=c1
//	region = us-east-1
//	--listen=:8080
//	ext-proc-listen=          # an empty value: ext_proc off
//	secure-serving            # a bool flag alone is true
//	log-format json
//
// The name ends at the first '=' or blank; the value is the rest of the line with surrounding
// blanks trimmed (a value in double quotes is unquoted as a Go string, for values with
// surrounding blanks). Blank lines and lines whose first non-blank character is '#' are
// skipped; a '#' later in a line is part of the value. A flag may appear once, the file flag
// never, and a name that is no flag is an error naming the line.
package flagenv

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Prefix is the environment prefix of every Switchyard command's flags.
const Prefix = "SWITCHYARD"

// Source is where a flag's value came from.
type Source int

// Sources, lowest precedence first.
const (
	// Default: the flag was not set.
	Default Source = iota
	// File: the file named by the file flag.
	File
	// Env: an environment variable.
	Env
	// CommandLine: the command line.
	CommandLine
)

// String returns the source's name.
func (s Source) String() string {
	switch s {
	case File:
		return "file"
	case Env:
		return "environment"
	case CommandLine:
		return "command line"
	}
	return "default"
}

// Options say where Parse looks for the flags the command line leaves unset.
type Options struct {
	// EnvPrefix turns on the environment: each flag not set on the command line is read from
	// EnvName(EnvPrefix, name). Empty: no environment.
	EnvPrefix string
	// Getenv looks up an environment variable. Default os.Getenv.
	Getenv func(string) string
	// EnvFlags, when not nil, lists the only flags read from the environment.
	EnvFlags []string
	// SplitEnv lists flags whose environment value is a blank-separated list: the flag is set
	// once per word (for a repeatable flag).
	SplitEnv []string
	// FileFlag names the flag whose value, from the command line or the environment, is a file
	// of flag values (see the package documentation). Empty: no file.
	FileFlag string
	// ReadFile reads that file. Default os.ReadFile.
	ReadFile func(string) ([]byte, error)
}

// EnvName returns the environment variable of a flag: prefix, '_', and the flag's name in upper
// case with '-' and '.' as '_'. EnvName("SWITCHYARD", "ext-proc-listen") is
// SWITCHYARD_EXT_PROC_LISTEN.
func EnvName(prefix, flagName string) string {
	return prefix + "_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(flagName))
}

// Parse parses args into fs, then sets every flag the command line did not set from the
// environment, then every flag still unset from the file named by the file flag: the command
// line wins over the environment, and the environment over the file. It returns where each
// flag that was set came from, by flag name (a deprecated alias's under the name it stands
// for). Errors from the command line are fs.Parse's (flag.ErrHelp for --help); every bad value
// in the environment or the file is reported, each naming the flag and the variable or the
// file's line. Arguments after the flags are left in fs.Args.
func Parse(fs *flag.FlagSet, args []string, o Options) (map[string]Source, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	p := parser{fs: fs, o: o, sources: map[string]Source{}}
	fs.Visit(func(f *flag.Flag) { p.sources[canonical(f)] = CommandLine })
	if o.EnvPrefix != "" {
		if err := p.env(); err != nil {
			return p.sources, err
		}
	}
	if o.FileFlag != "" {
		if err := p.file(); err != nil {
			return p.sources, err
		}
	}
	return p.sources, nil
}

type parser struct {
	fs      *flag.FlagSet
	o       Options
	sources map[string]Source
}

// env sets the flags not set yet from the environment: canonical names first, so that a flag's
// own variable wins over a deprecated alias's.
func (p *parser) env() error {
	getenv := p.o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var names, aliases []*flag.Flag
	p.fs.VisitAll(func(f *flag.Flag) {
		if p.o.EnvFlags != nil && !slices.Contains(p.o.EnvFlags, f.Name) {
			return
		}
		if canonical(f) == f.Name {
			names = append(names, f)
		} else {
			aliases = append(aliases, f)
		}
	})
	var errs []error
	for _, f := range append(names, aliases...) {
		name := canonical(f)
		if p.sources[name] != Default {
			continue
		}
		key := EnvName(p.o.EnvPrefix, f.Name)
		v := getenv(key)
		if v == "" {
			continue
		}
		values := []string{v}
		if slices.Contains(p.o.SplitEnv, f.Name) {
			values = strings.Fields(v)
		}
		for _, one := range values {
			if err := p.fs.Set(f.Name, one); err != nil {
				errs = append(errs, fmt.Errorf("environment %s=%q: invalid value for --%s: %w", key, v, f.Name, err))
				break
			}
		}
		p.sources[name] = Env
	}
	return errors.Join(errs...)
}

// file sets the flags not set yet from the file the file flag names, if it names one.
func (p *parser) file() error {
	ff := p.fs.Lookup(p.o.FileFlag)
	if ff == nil {
		return fmt.Errorf("flagenv: no flag --%s", p.o.FileFlag)
	}
	path := ff.Value.String()
	if path == "" {
		return nil
	}
	readFile := p.o.ReadFile
	if readFile == nil {
		readFile = os.ReadFile
	}
	data, err := readFile(path)
	if err != nil {
		return fmt.Errorf("--%s: %w", p.o.FileFlag, err)
	}
	lines, err := parseFile(path, string(data))
	if err != nil {
		return err
	}
	var errs []error
	seen := map[string]int{} // canonical name → line
	for _, l := range lines {
		if err := p.setFromFile(path, l, seen); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// setFromFile applies one line of the file.
func (p *parser) setFromFile(path string, l line, seen map[string]int) error {
	f := p.fs.Lookup(l.name)
	switch {
	case f == nil:
		return fmt.Errorf("%s:%d: unknown flag --%s", path, l.n, l.name)
	case canonical(f) == canonical(p.fs.Lookup(p.o.FileFlag)):
		return fmt.Errorf("%s:%d: --%s cannot be set in the file it names", path, l.n, l.name)
	}
	name := canonical(f)
	if first, dup := seen[name]; dup {
		return fmt.Errorf("%s:%d: --%s is already set on line %d", path, l.n, name, first)
	}
	seen[name] = l.n
	value := l.value
	if !l.hasValue {
		if !isBool(f) {
			return fmt.Errorf("%s:%d: --%s needs a value (%s=VALUE)", path, l.n, l.name, l.name)
		}
		value = "true"
	}
	if p.sources[name] != Default { // the command line or the environment set it
		return nil
	}
	if err := p.fs.Set(l.name, value); err != nil {
		return fmt.Errorf("%s:%d: invalid value %q for --%s: %w", path, l.n, value, l.name, err)
	}
	p.sources[name] = File
	return nil
}

// isBool reports whether f may be given without a value.
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
