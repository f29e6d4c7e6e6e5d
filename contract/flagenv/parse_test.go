package flagenv_test

import (
	"errors"
	"flag"
	"io"
	"io/fs"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/flagenv"
)

// testConfig has a field of every supported kind.
type testConfig struct {
	Listen    string        `flag:"listen" usage:"address to serve"`
	ExtProc   string        `flag:"ext-proc-listen" usage:"ext_proc address; empty disables it"`
	Secure    bool          `flag:"secure-serving" usage:"serve TLS"`
	Header    bool          `flag:"endpoint-header" usage:"add the header"`
	Attempts  int           `flag:"max-attempts" usage:"tries" alias:"attempts"`
	Bytes     int64         `flag:"max-body-bytes" usage:"body limit"`
	Seed      uint64        `flag:"seed" usage:"seed"`
	Scale     float64       `flag:"time-scale" usage:"time scale"`
	Wait      time.Duration `flag:"queue-wait" usage:"wait"`
	Peers     []string      `flag:"gossip-join" usage:"peers"`
	File      string        `flag:"config" usage:"file of flag values"`
	NotAFlag  int           `flag:"-"`
	unexposed int           // Bind skips unexported fields
}

func defaults() testConfig {
	return testConfig{
		unexposed: 0,
		Listen:    ":8080",
		ExtProc:   ":9002",
		Header:    true,
		Attempts:  3,
		Bytes:     32 << 20,
		Scale:     1,
		Wait:      2 * time.Second,
	}
}

// parse binds a testConfig to a fresh flag set and parses args, env and files.
func parse(
	t *testing.T,
	args []string,
	env map[string]string,
	files map[string]string,
) (testConfig, map[string]flagenv.Source, error) {
	t.Helper()
	c := defaults()
	fset := flag.NewFlagSet("test", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	if _, err := flagenv.Bind(fset, &c, flagenv.BindOptions{}); err != nil {
		t.Fatal(err)
	}
	src, err := flagenv.Parse(fset, args, flagenv.Options{
		EnvPrefix: flagenv.Prefix,
		Getenv:    func(k string) string { return env[k] },
		FileFlag:  "config",
		ReadFile: func(name string) ([]byte, error) {
			if data, ok := files[name]; ok {
				return []byte(data), nil
			}
			return nil, fs.ErrNotExist
		},
	})
	return c, src, err
}

func TestEnvName(t *testing.T) {
	for flagName, want := range map[string]string{
		"listen":                  "SWITCHYARD_LISTEN",
		"ext-proc-listen":         "SWITCHYARD_EXT_PROC_LISTEN",
		"max-inflight-body-bytes": "SWITCHYARD_MAX_INFLIGHT_BODY_BYTES",
		"token-file":              "SWITCHYARD_TOKEN_FILE",
		"a.b":                     "SWITCHYARD_A_B",
	} {
		if got := flagenv.EnvName(flagenv.Prefix, flagName); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", flagName, got, want)
		}
	}
}

// The command line wins over the environment, the environment over the file, the file over
// the default.
func TestPrecedence(t *testing.T) {
	file := map[string]string{"f.conf": "listen=:1\nmax-attempts=7\nqueue-wait=9s\n"}
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		want   string // the value of --listen
		source flagenv.Source
	}{
		{"default", nil, nil, ":8080", flagenv.Default},
		{"file over default", []string{"--config=f.conf"}, nil, ":1", flagenv.File},
		{
			"environment over file",
			[]string{"--config=f.conf"},
			map[string]string{"SWITCHYARD_LISTEN": ":2"},
			":2",
			flagenv.Env,
		},
		{
			"command line over environment",
			[]string{"--config=f.conf", "--listen=:3"},
			map[string]string{"SWITCHYARD_LISTEN": ":2"},
			":3",
			flagenv.CommandLine,
		},
		{"command line over file", []string{"--config=f.conf", "--listen=:3"}, nil, ":3", flagenv.CommandLine},
		{"environment over default", nil, map[string]string{"SWITCHYARD_LISTEN": ":2"}, ":2", flagenv.Env},
		{"file named by the environment", nil, map[string]string{"SWITCHYARD_CONFIG": "f.conf"}, ":1", flagenv.File},
		{
			"empty environment value is unset",
			[]string{"--config=f.conf"},
			map[string]string{"SWITCHYARD_LISTEN": ""},
			":1",
			flagenv.File,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, src, err := parse(t, tt.args, tt.env, file)
			if err != nil {
				t.Fatal(err)
			}
			if c.Listen != tt.want || src["listen"] != tt.source {
				t.Errorf("--listen = %q from %v, want %q from %v", c.Listen, src["listen"], tt.want, tt.source)
			}
		})
	}
}

// Each source sets the flags the ones above it leave alone, and a field the file leaves out
// keeps its default.
func TestSourcesMix(t *testing.T) {
	c, src, err := parse(t, []string{"--config=f.conf", "--max-body-bytes=5"},
		map[string]string{"SWITCHYARD_QUEUE_WAIT": "1s", "SWITCHYARD_SEED": "42"},
		map[string]string{"f.conf": "queue-wait=9s\ntime-scale=0.5\nsecure-serving\n"})
	if err != nil {
		t.Fatal(err)
	}
	want := defaults()
	want.File, want.Bytes, want.Wait, want.Seed, want.Scale, want.Secure = "f.conf", 5, time.Second, 42, 0.5, true
	if !equal(c, want) {
		t.Errorf("config %+v, want %+v", c, want)
	}
	wantSrc := map[string]flagenv.Source{"config": flagenv.CommandLine, "max-body-bytes": flagenv.CommandLine,
		"queue-wait": flagenv.Env, "seed": flagenv.Env, "time-scale": flagenv.File, "secure-serving": flagenv.File}
	if len(src) != len(wantSrc) {
		t.Errorf("sources %v, want %v", src, wantSrc)
	}
	for name, s := range wantSrc {
		if src[name] != s {
			t.Errorf("--%s from %v, want %v", name, src[name], s)
		}
	}
}

func equal(a, b testConfig) bool {
	if !slices.Equal(a.Peers, b.Peers) {
		return false
	}
	a.Peers, b.Peers = nil, nil
	return reflect.DeepEqual(a, b)
}

// Variables that name no flag, or a flag left out, are ignored; so are variables of another
// prefix.
func TestUnknownEnvIgnored(t *testing.T) {
	c, src, err := parse(t, nil, map[string]string{
		"SWITCHYARD_NO_SUCH_FLAG": "x",
		"SWITCHYARD_NOT_A_FLAG":   "5",
		"SWITCHYARD_NOTAFLAG":     "5",
		"LISTEN":                  ":1",
		"OTHER_LISTEN":            ":1",
	}, nil)
	if err != nil || !equal(c, defaults()) || len(src) != 0 {
		t.Fatalf("config %+v sources %v err %v, want the defaults", c, src, err)
	}
}

// A bad value is reported with the flag and where it came from: the variable, or the file's
// line; every bad value at once.
func TestBadValues(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		files map[string]string
		want  []string // substrings of the error
	}{
		{
			"command line",
			[]string{"--max-attempts=many"},
			nil,
			nil,
			[]string{`invalid value "many" for flag -max-attempts`, "want an integer"},
		},
		{"environment", nil, map[string]string{"SWITCHYARD_MAX_ATTEMPTS": "many"}, nil,
			[]string{`environment SWITCHYARD_MAX_ATTEMPTS="many": invalid value for --max-attempts: want an integer`}},
		{
			"every bad variable",
			nil,
			map[string]string{"SWITCHYARD_QUEUE_WAIT": "soon", "SWITCHYARD_SECURE_SERVING": "maybe"},
			nil,
			[]string{
				"SWITCHYARD_QUEUE_WAIT",
				"--queue-wait: want a duration",
				"SWITCHYARD_SECURE_SERVING",
				"--secure-serving: want true or false",
			},
		},
		{
			"out of range",
			nil,
			map[string]string{"SWITCHYARD_SEED": "-1"},
			nil,
			[]string{"SWITCHYARD_SEED", "want a non-negative integer"},
		},
		{
			"file line",
			[]string{"--config=f.conf"},
			nil,
			map[string]string{"f.conf": "# comment\n\nmax-attempts=3\ntime-scale=fast\n"},
			[]string{`f.conf:4: invalid value "fast" for --time-scale: want a number`},
		},
		{
			"unknown flag in the file",
			[]string{"--config=f.conf"},
			nil,
			map[string]string{"f.conf": "listen=:1\nlisten-address=:2\n"},
			[]string{"f.conf:2: unknown flag --listen-address"},
		},
		{"flag twice in the file", []string{"--config=f.conf"}, nil, map[string]string{"f.conf": "listen=:1\n--listen=:2\n"},
			[]string{"f.conf:2: --listen is already set on line 1"}},
		{
			"alias and flag in the file",
			[]string{"--config=f.conf"},
			nil,
			map[string]string{"f.conf": "max-attempts=1\nattempts=2\n"},
			[]string{"f.conf:2: --max-attempts is already set on line 1"},
		},
		{
			"value missing",
			[]string{"--config=f.conf"},
			nil,
			map[string]string{"f.conf": "listen\n"},
			[]string{"f.conf:1: --listen needs a value"},
		},
		{"file names a file", []string{"--config=f.conf"}, nil, map[string]string{"f.conf": "config=g.conf\n"},
			[]string{"f.conf:1: --config cannot be set in the file"}},
		{
			"bad line",
			[]string{"--config=f.conf"},
			nil,
			map[string]string{"f.conf": "=:1\n"},
			[]string{`f.conf:1: want name=value, got "=:1"`},
		},
		{
			"bad quoting",
			[]string{"--config=f.conf"},
			nil,
			map[string]string{"f.conf": "listen=\"x\n"},
			[]string{"f.conf:1: --listen: bad quoted value"},
		},
		{"missing file", []string{"--config=nope.conf"}, nil, nil, []string{"--config: file does not exist"}},
		{"every bad line", []string{"--config=f.conf"}, nil, map[string]string{"f.conf": "seed=x\nqueue-wait=y\n"},
			[]string{"f.conf:1: invalid value \"x\" for --seed", "f.conf:2: invalid value \"y\" for --queue-wait"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parse(t, tt.args, tt.env, tt.files)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want it to mention %q", err, w)
				}
			}
		})
	}
}

// The file's line syntax: the forms of the package documentation.
func TestFileSyntax(t *testing.T) {
	c, _, err := parse(t, []string{"--config=f.conf"}, nil, map[string]string{"f.conf": strings.Join([]string{
		"  # comment",
		"listen = 127.0.0.1:80",
		"--ext-proc-listen=",
		"-secure-serving",
		"endpoint-header false",
		"max-attempts=5\r",
		`gossip-join=" a:1, b:2 "`,
		"queue-wait=1s # not a comment",
	}, "\n")})
	if err == nil || !strings.Contains(err.Error(), `f.conf:8: invalid value "1s # not a comment" for --queue-wait`) {
		t.Fatalf("a '#' after a value: err %v", err)
	}
	want := defaults()
	want.File, want.Listen, want.ExtProc, want.Secure, want.Header, want.Attempts, want.Peers = "f.conf", "127.0.0.1:80", "", true, false, 5, []string{
		"a:1",
		"b:2",
	}
	if !equal(c, want) {
		t.Errorf("config %+v, want %+v", c, want)
	}
}

// A deprecated alias sets its flag, from every source, and the flag's own name wins over it.
func TestAliases(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		file string
		want int
	}{
		{"command line", []string{"--attempts=4"}, nil, "", 4},
		{"environment", nil, map[string]string{"SWITCHYARD_ATTEMPTS": "5"}, "", 5},
		{"file", []string{"--config=f.conf"}, nil, "attempts=6", 6},
		{
			"own name's variable wins",
			nil,
			map[string]string{"SWITCHYARD_ATTEMPTS": "5", "SWITCHYARD_MAX_ATTEMPTS": "7"},
			"",
			7,
		},
		{
			"command line alias over environment",
			[]string{"--attempts=4"},
			map[string]string{"SWITCHYARD_MAX_ATTEMPTS": "7"},
			"",
			4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, src, err := parse(t, tt.args, tt.env, map[string]string{"f.conf": tt.file})
			if err != nil {
				t.Fatal(err)
			}
			if c.Attempts != tt.want || src["max-attempts"] == flagenv.Default || src["attempts"] != flagenv.Default {
				t.Errorf("--max-attempts = %d (sources %v), want %d", c.Attempts, src, tt.want)
			}
		})
	}
}

// EnvFlags limits the environment to some flags; SplitEnv sets a repeatable flag once per word.
func TestEnvOptions(t *testing.T) {
	var addr, token, model string
	var targets []string
	fset := flag.NewFlagSet("ctl", flag.ContinueOnError)
	fset.StringVar(&addr, "addr", "http://127.0.0.1:9090", "")
	fset.StringVar(&token, "token-file", "", "")
	fset.StringVar(&model, "model", "", "")
	fset.Func("target", "", func(s string) error { targets = append(targets, s); return nil })
	env := map[string]string{
		"SWITCHYARD_ADDR":   "http://r:9090",
		"SWITCHYARD_MODEL":  "m",
		"SWITCHYARD_TARGET": "a=http://a  b=http://b",
	}
	_, err := flagenv.Parse(fset, []string{"--token-file=t"}, flagenv.Options{
		EnvPrefix: flagenv.Prefix, Getenv: func(k string) string { return env[k] },
		EnvFlags: []string{"addr", "token-file", "target"}, SplitEnv: []string{"target"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if addr != "http://r:9090" || token != "t" || model != "" ||
		!slices.Equal(targets, []string{"a=http://a", "b=http://b"}) {
		t.Errorf("addr %q token %q model %q targets %q", addr, token, model, targets)
	}
}

func TestHelp(t *testing.T) {
	if _, _, err := parse(t, []string{"--help"}, nil, nil); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v, want flag.ErrHelp", err)
	}
}

func TestSourceString(t *testing.T) {
	for s, want := range map[flagenv.Source]string{flagenv.Default: "default", flagenv.File: "file", flagenv.Env: "environment", flagenv.CommandLine: "command line"} {
		if s.String() != want {
			t.Errorf("%d: %q, want %q", s, s.String(), want)
		}
	}
}

// FuzzFile: a file of flag values never panics Parse; every error names the file, and an
// accepted file, written back from the values it set, parses to the same config.
func FuzzFile(f *testing.F) {
	f.Add("listen=:1\nsecure-serving\n# c\nmax-attempts 5\ngossip-join=a:1,b:2\n")
	f.Add("--queue-wait=1m30s\ntime-scale=\"0.5\"\nseed=0x10\n")
	f.Add("=\n--\n-\n\"\nlisten=\"\\x00\"\n")
	f.Fuzz(func(t *testing.T, data string) {
		c, src, err := parse(t, []string{"--config=f.conf"}, nil, map[string]string{"f.conf": data})
		if err != nil {
			if !strings.Contains(err.Error(), "f.conf") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		var b strings.Builder
		fset := flag.NewFlagSet("written", flag.ContinueOnError)
		if _, err := flagenv.Bind(fset, &c, flagenv.BindOptions{}); err != nil {
			t.Fatal(err)
		}
		for name, s := range src {
			if s == flagenv.File {
				b.WriteString(name + "=" + strconv.Quote(fset.Lookup(name).Value.String()) + "\n")
			}
		}
		got, _, err := parse(t, []string{"--config=f.conf"}, nil, map[string]string{"f.conf": b.String()})
		if err != nil {
			t.Fatalf("written back %q: %v", b.String(), err)
		}
		if !equal(got, c) {
			t.Fatalf("written back %q: %+v, want %+v", b.String(), got, c)
		}
	})
}
