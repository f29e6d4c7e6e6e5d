package flagenv_test

import (
	"flag"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/contract/flagenv"
)

func TestBindDescribesEveryField(t *testing.T) {
	c := defaults()
	fset := flag.NewFlagSet("test", flag.ContinueOnError)
	flags, err := flagenv.Bind(fset, &c, flagenv.BindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range flags {
		names = append(names, f.Name)
	}
	if got, want := strings.Join(
		names,
		" ",
	), "listen ext-proc-listen secure-serving endpoint-header max-attempts max-body-bytes seed time-scale queue-wait gossip-join config"; got != want {
		t.Errorf("flags %q, want %q (field order)", got, want)
	}
	byName := map[string]flagenv.Flag{}
	for _, f := range flags {
		byName[f.Name] = f
	}
	for name, want := range map[string]string{"listen": ":8080", "secure-serving": "false", "endpoint-header": "true", "max-attempts": "3",
		"max-body-bytes": "33554432", "seed": "0", "time-scale": "1", "queue-wait": "2s", "gossip-join": "", "config": ""} {
		if got := byName[name].Default; got != want {
			t.Errorf("--%s default %q, want %q", name, got, want)
		}
	}
	if f := byName["max-attempts"]; f.Field != "Attempts" || f.Usage != "tries" || len(f.Aliases) != 1 ||
		f.Aliases[0] != "attempts" {
		t.Errorf("max-attempts: %+v", f)
	}
	if !byName["secure-serving"].Bool || byName["listen"].Bool {
		t.Error("Bool is wrong")
	}
	if fset.Lookup("attempts") == nil ||
		!strings.Contains(fset.Lookup("attempts").Usage, "deprecated: use --max-attempts") {
		t.Error("the alias is not registered as deprecated")
	}
}

// sizeValue stands for a field whose parse is not its type's (a size with units).
type sizeValue struct{ p *int64 }

func (s sizeValue) String() string {
	if s.p == nil {
		return ""
	}
	return strconv.FormatInt(*s.p, 10)
}

func (s sizeValue) Set(v string) error {
	n, err := strconv.ParseInt(strings.TrimSuffix(v, "KiB"), 10, 64)
	*s.p = n << 10
	return err
}

func TestBindValues(t *testing.T) {
	var c struct {
		Budget int64             `flag:"budget"`
		RTT    map[string]string `flag:"rtt" usage:"round trips"`
		Node   string            `flag:"node-name" usage:"node" default:"router-<region>-<hostname>"`
	}
	rtt := flag.Value(sizeValue{})
	fset := flag.NewFlagSet("test", flag.ContinueOnError)
	flags, err := flagenv.Bind(fset, &c, flagenv.BindOptions{
		Values: map[string]flag.Value{"budget": sizeValue{&c.Budget}, "rtt": rtt},
		Usage:  map[string]string{"budget": "bytes of `x`"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := fset.Parse([]string{"--budget=2KiB"}); err != nil || c.Budget != 2048 {
		t.Fatalf("budget %d, err %v", c.Budget, err)
	}
	if flags[0].Usage != "bytes of `x`" {
		t.Errorf("usage from BindOptions: %q", flags[0].Usage)
	}
	if flags[2].Default != "router-<region>-<hostname>" {
		t.Errorf("described default %q", flags[2].Default)
	}
}

func TestBindRejects(t *testing.T) {
	type untagged struct {
		Listen string
	}
	type noUsage struct {
		Listen string `flag:"listen"`
	}
	type unsupported struct {
		RTT map[string]string `flag:"rtt" usage:"x"`
	}
	type describedRealDefault struct {
		Listen string `flag:"listen" usage:"x" default:":9"`
	}
	type ok struct {
		Listen string `flag:"listen" usage:"x"`
	}
	tests := []struct {
		name   string
		cfg    any
		values map[string]flag.Value
		usage  map[string]string
		want   string
	}{
		{"not a pointer", ok{}, nil, nil, "pointer to a struct"},
		{"untagged field", &untagged{}, nil, nil, "untagged.Listen: no flag tag"},
		{"no usage", &noUsage{}, nil, nil, "--listen has no usage text"},
		{"usage twice", &ok{}, nil, map[string]string{"listen": "y"}, "a usage tag and a BindOptions.Usage text"},
		{"usage for no field", &noUsage{}, nil, map[string]string{"listen": "x", "lisen": "y"}, "BindOptions name --lisen"},
		{"unsupported type", &unsupported{}, nil, nil, "unsupported type map[string]string"},
		{"a described default over a real one", &describedRealDefault{Listen: ":8080"}, nil, nil, `this field's is ":8080"`},
		{"a value for no field", &ok{}, map[string]flag.Value{"lisen": sizeValue{}}, nil, "BindOptions name --lisen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := flag.NewFlagSet("test", flag.ContinueOnError)
			fset.SetOutput(io.Discard)
			if _, err := flagenv.Bind(
				fset,
				tt.cfg,
				flagenv.BindOptions{Values: tt.values, Usage: tt.usage},
			); err == nil ||
				!strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestPrintUsage(t *testing.T) {
	flags := []flagenv.Flag{
		{Name: "listen", Usage: "address of the `OpenAI` API", Default: ":8080"},
		{Name: "secure-serving", Usage: "serve TLS", Default: "false", Bool: true},
		{Name: "endpoint-header", Usage: "add it", Default: "true", Bool: true, Aliases: []string{"header"}},
	}
	var b strings.Builder
	flagenv.PrintUsage(&b, flags, flagenv.Prefix)
	want := "  --listen=:8080  (SWITCHYARD_LISTEN)\n    \taddress of the OpenAI API\n" +
		"  --secure-serving  (SWITCHYARD_SECURE_SERVING)\n    \tserve TLS\n" +
		"  --endpoint-header=true  (SWITCHYARD_ENDPOINT_HEADER)\n    \tadd it\n" +
		"  --header\n    \tdeprecated: use --endpoint-header\n"
	if b.String() != want {
		t.Errorf("usage:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestMarkdown(t *testing.T) {
	flags := []flagenv.Flag{
		{Name: "listen", Usage: "address; `a|b`", Default: ":8080"},
		{Name: "endpoints", Usage: "pods"},
		{Name: "max-attempts", Usage: "tries", Default: "3", Aliases: []string{"attempts"}},
	}
	want := "| flag | environment | default | meaning |\n|---|---|---|---|\n" +
		"| `--listen` | `SWITCHYARD_LISTEN` | `:8080` | address; `a\\|b` |\n" +
		"| `--endpoints` | `SWITCHYARD_ENDPOINTS` |  | pods |\n" +
		"| `--max-attempts` | `SWITCHYARD_MAX_ATTEMPTS` | `3` | tries. Deprecated alias: `--attempts` |\n"
	if got := flagenv.Markdown(flags, flagenv.Prefix); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	if got := flagenv.Markdown(flags[:1], ""); !strings.HasPrefix(got, "| flag | default | meaning |") {
		t.Errorf("table without the environment:\n%s", got)
	}
}

func TestReplaceTable(t *testing.T) {
	doc := "# title\n\n" + flagenv.TableBegin + "\nold table\n" + flagenv.TableEnd + "\n\nmore\n"
	got, err := flagenv.ReplaceTable([]byte(doc), "| new |\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# title\n\n" + flagenv.TableBegin + "\n| new |\n" + flagenv.TableEnd + "\n\nmore\n"
	if string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	again, _ := flagenv.ReplaceTable(got, "| new |\n")
	if string(again) != want {
		t.Error("replacing twice changed the doc")
	}
	for _, bad := range []string{"no markers", flagenv.TableEnd + "\n" + flagenv.TableBegin, flagenv.TableBegin + flagenv.TableBegin + flagenv.TableEnd} {
		if _, err := flagenv.ReplaceTable([]byte(bad), "x"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
