package flagenv

import (
	"flag"
	"fmt"
	"io"
)

// Command is a program's flags bound to its Config struct C: what Flags and Parse need to bind
// the fields' tags, print --help and read the environment and the file of flag values. A
// binary declares one, and its own Config checks (Validate) run on what Parse returns.
type Command[C any] struct {
	// Name is the program's name: the flag set's, and the first word of --help's usage line.
	Name string
	// Synopsis follows Name in --help's usage line: the flags a run needs, then "[flags]".
	Synopsis string
	// Defaults returns the Config every flag starts from (the program's DefaultConfig).
	Defaults func() C
	// Options returns the bind options for the Config it is given: the help texts (the usage
	// table) and the flag.Value of each flag whose parse is not its field type's, bound to
	// that Config's fields. Nil: the tags alone.
	Options func(*C) BindOptions
	// FileFlag names the flag of the file of flag values (Options.FileFlag). Empty: no file.
	FileFlag string
	// Args, when set, rewrites the command line before it is parsed, with every flag bound
	// on fs (for flags that take a value in the next argument, say).
	Args func(fs *flag.FlagSet, args []string) []string
}

// Flags describes every flag, with its default, in the order of C's fields, for --help, the
// docs' tables and the program's tests. It panics when C's tags and Options disagree (Bind's
// error): a programming error that any test calling Flags reports.
func (c Command[C]) Flags() []Flag {
	cfg := c.Defaults()
	flags, err := Bind(flag.NewFlagSet(c.Name, flag.ContinueOnError), &cfg, c.options(&cfg))
	if err != nil {
		panic(fmt.Sprintf("flagenv: the flags of %s: %v", c.Name, err))
	}
	return flags
}

// Parse builds a C from the command line (args), then the environment variable of each flag
// args leaves unset (EnvName(Prefix, flag), read with getenv; nil is os.Getenv), then the file
// of FileFlag for those still unset, then Defaults; it returns where each flag set came from.
// It returns flag.ErrHelp after printing the usage to out for --help, an error naming the first
// argument that is not a flag, and otherwise every invalid value, each naming its flag and
// where the value came from. out also gets the flag package's messages about the command line.
func (c Command[C]) Parse(args []string, getenv func(string) string, out io.Writer) (C, map[string]Source, error) {
	cfg := c.Defaults()
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.SetOutput(out)
	flags, err := Bind(fs, &cfg, c.options(&cfg))
	if err != nil {
		return cfg, nil, err
	}
	fs.Usage = func() { c.printUsage(out, flags) }
	if c.Args != nil {
		args = c.Args(fs, args)
	}
	sources, err := Parse(fs, args, Options{EnvPrefix: Prefix, Getenv: getenv, FileFlag: c.FileFlag})
	if err != nil {
		return cfg, sources, err
	}
	if fs.NArg() > 0 {
		return cfg, sources, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return cfg, sources, nil
}

// options returns Options(cfg), or none.
func (c Command[C]) options(cfg *C) BindOptions {
	if c.Options == nil {
		return BindOptions{}
	}
	return c.Options(cfg)
}

// printUsage writes --help: the usage line, where else flags are read from (with the variable
// of --listen as the example, or of the first flag when there is no --listen), then every
// flag's lines.
func (c Command[C]) printUsage(w io.Writer, flags []Flag) {
	example := "listen"
	if !hasFlag(flags, example) && len(flags) > 0 {
		example = flags[0].Name
	}
	fmt.Fprintf(w, "Usage: %s %s\n\n", c.Name, c.Synopsis)
	fmt.Fprintf(w, "Every flag may also be set with the environment variable %s (e.g. %s)",
		EnvName(Prefix, "<FLAG>"), EnvName(Prefix, example))
	if c.FileFlag == "" {
		fmt.Fprintf(w, ".\n\n")
	} else {
		fmt.Fprintf(
			w,
			", or in the file\n--%s names (name=value lines); the command line wins over both, the environment over the file.\n\n",
			c.FileFlag,
		)
	}
	PrintUsage(w, flags, Prefix)
}

// hasFlag reports whether flags holds one named name.
func hasFlag(flags []Flag, name string) bool {
	for _, f := range flags {
		if f.Name == name {
			return true
		}
	}
	return false
}
