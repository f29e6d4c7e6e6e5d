package flagenv_test

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/contract/flagenv"
)

// testCommand is a Command over testConfig, with a usage table and a value of its own.
func testCommand() flagenv.Command[testConfig] {
	return flagenv.Command[testConfig]{
		Name:     "testd",
		Synopsis: "--listen=ADDR [flags]",
		Defaults: defaults,
		Options: func(c *testConfig) flagenv.BindOptions {
			return flagenv.BindOptions{Values: map[string]flag.Value{"max-body-bytes": sizeValue{&c.Bytes}}}
		},
		FileFlag: "config",
	}
}

func TestCommandParse(t *testing.T) {
	file := filepath.Join(t.TempDir(), "testd.flags")
	if err := os.WriteFile(file, []byte("listen=:1\nqueue-wait=3s\nmax-body-bytes=2KiB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cmd     func(*flagenv.Command[testConfig])
		args    []string
		env     map[string]string
		check   func(c testConfig, src map[string]flagenv.Source) bool
		wantErr string
	}{
		{name: "defaults", check: func(c testConfig, src map[string]flagenv.Source) bool {
			return reflect.DeepEqual(c, defaults()) && len(src) == 0
		}},
		{name: "command line over environment over file", args: []string{"--config=" + file, "--listen=:3"},
			env: map[string]string{"SWITCHYARD_LISTEN": ":2", "SWITCHYARD_QUEUE_WAIT": "4s"},
			check: func(c testConfig, src map[string]flagenv.Source) bool {
				return c.Listen == ":3" && c.Wait.String() == "4s" && c.Bytes == 2<<10 &&
					src["listen"] == flagenv.CommandLine && src["queue-wait"] == flagenv.Env && src["max-body-bytes"] == flagenv.File
			}},
		{name: "the options' value parses its flag", args: []string{"--max-body-bytes=3KiB"},
			check: func(c testConfig, _ map[string]flagenv.Source) bool { return c.Bytes == 3<<10 }},
		{
			name:    "a bad value of the options' flag",
			args:    []string{"--max-body-bytes=lots"},
			wantErr: `invalid value "lots" for flag -max-body-bytes`,
		},
		{name: "a bad value in the environment", env: map[string]string{"SWITCHYARD_MAX_ATTEMPTS": "many"},
			wantErr: `environment SWITCHYARD_MAX_ATTEMPTS="many": invalid value for --max-attempts`},
		{name: "a stray argument", args: []string{"--listen=:1", "serve", "now"}, wantErr: `unexpected argument "serve"`},
		{name: "no file flag: its value is only a flag", cmd: func(c *flagenv.Command[testConfig]) { c.FileFlag = "" },
			args:  []string{"--config=" + file},
			check: func(c testConfig, _ map[string]flagenv.Source) bool { return c.File == file && c.Listen == ":8080" }},
		{name: "Args rewrites the command line with the flags bound",
			cmd: func(c *flagenv.Command[testConfig]) {
				c.Args = func(fs *flag.FlagSet, args []string) []string {
					if fs.Lookup("secure-serving") == nil {
						return args
					}
					return append(args, "--secure-serving")
				}
			},
			check: func(c testConfig, src map[string]flagenv.Source) bool {
				return c.Secure && src["secure-serving"] == flagenv.CommandLine
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := testCommand()
			if tt.cmd != nil {
				tt.cmd(&cmd)
			}
			c, src, err := cmd.Parse(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want it to mention %q", err, tt.wantErr)
				}
			case err != nil || !tt.check(c, src):
				t.Fatalf("config %+v, sources %v, err %v", c, src, err)
			}
		})
	}
}

// --help prints the usage line, where else flags come from, and every flag; Parse returns
// flag.ErrHelp.
func TestCommandHelp(t *testing.T) {
	tests := []struct {
		name     string
		fileFlag string
		want     string
	}{
		{"with a file flag", "config", "Usage: testd --listen=ADDR [flags]\n\n" +
			"Every flag may also be set with the environment variable SWITCHYARD_<FLAG> (e.g. SWITCHYARD_LISTEN), or in the file\n" +
			"--config names (name=value lines); the command line wins over both, the environment over the file.\n\n" +
			"  --listen=:8080  (SWITCHYARD_LISTEN)\n    \taddress to serve\n"},
		{"without one", "", "Usage: testd --listen=ADDR [flags]\n\n" +
			"Every flag may also be set with the environment variable SWITCHYARD_<FLAG> (e.g. SWITCHYARD_LISTEN).\n\n" +
			"  --listen=:8080  (SWITCHYARD_LISTEN)\n    \taddress to serve\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := testCommand()
			cmd.FileFlag = tt.fileFlag
			var out strings.Builder
			if _, _, err := cmd.Parse([]string{"--help"}, nil, &out); !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("--help: %v, want flag.ErrHelp", err)
			}
			if !strings.HasPrefix(out.String(), tt.want) ||
				!strings.Contains(out.String(), "  --config=  (SWITCHYARD_CONFIG)\n") {
				t.Errorf("--help printed:\n%s\nwant it to start with:\n%s", out.String(), tt.want)
			}
		})
	}
}

// Flags describes the flags with their defaults, the options' values included; tags and options
// that disagree panic, naming the program.
func TestCommandFlags(t *testing.T) {
	flags := testCommand().Flags()
	if len(flags) != 11 || flags[0].Name != "listen" || flags[0].Default != ":8080" || flags[5].Name != "max-body-bytes" ||
		flags[5].Default != "33554432" {
		t.Fatalf("flags %+v", flags)
	}
	cmd := testCommand()
	cmd.Options = func(*testConfig) flagenv.BindOptions {
		return flagenv.BindOptions{Usage: map[string]string{"no-such-flag": "x"}}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "testd") ||
			!strings.Contains(fmt.Sprint(r), "--no-such-flag") {
			t.Errorf("recovered %v, want a panic naming testd and --no-such-flag", r)
		}
	}()
	cmd.Flags()
}

// failures records what CheckDoc reports instead of stopping the test.
type failures []string

func (f *failures) Helper() {}

func (f *failures) Fatalf(format string, args ...any) { *f = append(*f, fmt.Sprintf(format, args...)) }

var _ flagenv.TB = (*testing.T)(nil)

func TestCheckDoc(t *testing.T) {
	page := func(table string) string {
		return "# testd\n\n" + flagenv.TableBegin + "\n" + table + flagenv.TableEnd + "\n\nmore\n"
	}
	const table = "| new |\n"
	tests := []struct {
		name     string
		doc      string // "": no file
		update   bool
		wantDoc  string
		wantFail string // a part of the one failure; "": none
	}{
		{name: "up to date", doc: page(table), wantDoc: page(table)},
		{name: "up to date, update asked", doc: page(table), update: true, wantDoc: page(table)},
		{
			name:     "stale",
			doc:      page("| old |\n"),
			wantDoc:  page("| old |\n"),
			wantFail: "is stale: run `make generate` and commit it",
		},
		{name: "stale, rewritten", doc: page("| old |\n"), update: true, wantDoc: page(table)},
		{
			name:     "no markers",
			doc:      "# testd\n",
			update:   true,
			wantDoc:  "# testd\n",
			wantFail: "lacks the flags table's markers",
		},
		{name: "no page", wantFail: "read the flags doc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "testd.md")
			if tt.doc != "" {
				if err := os.WriteFile(path, []byte(tt.doc), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var got failures
			flagenv.CheckDoc(&got, path, table, tt.update)
			switch {
			case tt.wantFail == "" && len(got) != 0:
				t.Errorf("failed %q, want no failure", got)
			case tt.wantFail != "" && (len(got) != 1 || !strings.Contains(got[0], tt.wantFail)):
				t.Errorf("failures %q, want one mentioning %q", got, tt.wantFail)
			}
			if tt.doc == "" {
				return
			}
			if doc, err := os.ReadFile(path); err != nil || string(doc) != tt.wantDoc {
				t.Errorf("page %q (%v), want %q", doc, err, tt.wantDoc)
			}
		})
	}
}
