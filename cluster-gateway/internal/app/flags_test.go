package app_test

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/app"
	"github.com/switchyard-dev/switchyard/contract/flagenv"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the flags table of docs/gateway.md")

// TestFlagsDocUpToDate fails when docs/gateway.md's flags table is not the one Config's tags,
// usage table and defaults generate; `make generate` (this test with -update-docs) rewrites it.
func TestFlagsDocUpToDate(t *testing.T) {
	flagenv.CheckDoc(t, "../../../docs/gateway.md", flagenv.Markdown(app.Flags(), flagenv.Prefix), *updateDocs)
}

// Every flag is documented, and every Config field is a flag.
func TestFlags(t *testing.T) {
	flags := app.Flags()
	seen := map[string]bool{}
	for _, f := range flags {
		if f.Usage == "" || seen[f.Name] {
			t.Errorf("--%s: empty or repeated", f.Name)
		}
		seen[f.Name] = true
	}
	for _, name := range []string{"cluster", "region", "listen", "ext-proc-listen", "metrics-listen", "endpoints", "endpoints-file", "pool-name",
		"pool-namespace", "config", "profile", "flags-file", "gossip-bind", "gossip-join", "gossip-key-file", "advertise-url", "log-format",
		"max-inflight-body-bytes", "memory-limit", "drain-timeout"} {
		if !seen[name] {
			t.Errorf("no --%s", name)
		}
	}
	var out strings.Builder
	if _, err := app.ParseConfig([]string{"--help"}, func(string) string { return "" }, &out); err != flag.ErrHelp {
		t.Fatal(err)
	}
	for _, want := range []string{"--listen=:8080  (SWITCHYARD_LISTEN)", "--memory-limit=GOMEMLIMIT, else auto", "--secure-serving  (SWITCHYARD_SECURE_SERVING)",
		"--flags-file=  (SWITCHYARD_FLAGS_FILE)", "HTTP proxy address: OpenAI API, /healthz, /readyz"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q:\n%s", want, out.String())
		}
	}
}

// writeFile writes a file of flag values into the test's directory.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.flags")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The command line wins over the environment, the environment over --flags-file, the file over
// the default; env names are SWITCHYARD_<FLAG>, dashes as underscores.
func TestConfigPrecedence(t *testing.T) {
	file := writeFile(t, "cluster=c\nregion=r\nendpoints=127.0.0.1:1\nlisten=:1\next-proc-listen=:2\nqueue-ttl=3s\n")
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(c app.Config) bool
	}{
		{"file over default", []string{"--flags-file=" + file}, nil,
			func(c app.Config) bool {
				return c.Listen == ":1" && c.ExtProcListen == ":2" && c.QueueTTL == 3*time.Second && c.MetricsListen == ":9090"
			}},
		{
			"environment over file",
			[]string{"--flags-file=" + file},
			map[string]string{"SWITCHYARD_EXT_PROC_LISTEN": ":7000", "SWITCHYARD_QUEUE_TTL": "4s"},
			func(c app.Config) bool {
				return c.Listen == ":1" && c.ExtProcListen == ":7000" && c.QueueTTL == 4*time.Second
			},
		},
		{"command line over environment and file", []string{"--flags-file=" + file, "--ext-proc-listen=:8000", "--listen=:3"},
			map[string]string{"SWITCHYARD_EXT_PROC_LISTEN": ":7000"},
			func(c app.Config) bool {
				return c.Listen == ":3" && c.ExtProcListen == ":8000" && c.QueueTTL == 3*time.Second
			}},
		{"file named by the environment", nil, map[string]string{"SWITCHYARD_FLAGS_FILE": file},
			func(c app.Config) bool { return c.Cluster == "c" && c.Listen == ":1" && c.FlagsFile == file }},
		{"an empty variable is unset", []string{"--flags-file=" + file}, map[string]string{"SWITCHYARD_LISTEN": ""},
			func(c app.Config) bool { return c.Listen == ":1" }},
		{
			"unknown variables are ignored",
			[]string{"--flags-file=" + file},
			map[string]string{"SWITCHYARD_NO_SUCH_FLAG": "x", "SWITCHYARD_LISTEN_ADDRESS": ":9"},
			func(c app.Config) bool { return c.Listen == ":1" },
		},
		{"--config stays GIE's file", []string{"--flags-file=" + file, "--config=" + file}, nil,
			func(c app.Config) bool { return c.ConfigFile == file && c.Profile == "default" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := app.ParseConfig(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			if err != nil || !tt.check(c) {
				t.Fatalf("config %+v, err %v", c, err)
			}
		})
	}
}

// A bad value names its flag and where it came from: the variable or the file's line.
func TestConfigBadValues(t *testing.T) {
	base := []string{"--cluster=c", "--region=r", "--endpoints=127.0.0.1:1"}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		file string
		want []string
	}{
		{"command line", append(base, "--queue-ttl=soon"), nil, "", []string{`invalid value "soon" for flag -queue-ttl`}},
		{"environment", base, map[string]string{"SWITCHYARD_QUEUE_TTL": "soon"}, "",
			[]string{`environment SWITCHYARD_QUEUE_TTL="soon": invalid value for --queue-ttl`}},
		{
			"file line",
			base,
			nil,
			"# limits\nqueue-limit=10\nqueue-ttl=soon\n",
			[]string{`:3: invalid value "soon" for --queue-ttl`},
		},
		{"unknown flag in the file", base, nil, "queue-limits=10\n", []string{":1: unknown flag --queue-limits"}},
		{
			"bad size in the file",
			base,
			nil,
			"max-inflight-body-bytes=lots\n",
			[]string{`:1: invalid value "lots" for --max-inflight-body-bytes`},
		},
		{
			"invalid after parsing",
			base,
			nil,
			"max-attempts=0\nlog-format=xml\n",
			[]string{"--max-attempts must be at least 1", "--log-format=\"xml\""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.file != "" {
				args = append(append([]string(nil), args...), "--flags-file="+writeFile(t, tt.file))
			}
			_, err := app.ParseConfig(args, func(k string) string { return tt.env[k] }, io.Discard)
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want it to mention %q", err, w)
				}
			}
		})
	}
}

// Validate reports every problem at once, each naming its flag.
func TestValidateReportsEveryProblem(t *testing.T) {
	c := app.DefaultConfig()
	c.Listen, c.MaxAttempts, c.QueueTTL, c.LogFormat, c.MinPriority, c.MaxPriority = "8080", 0, 0, "xml", 5, 1
	c.Endpoints, c.PoolName = "127.0.0.1:1", "pool"
	c.GossipJoin = "10.0.0.1:7946"
	err := c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	// (--region is required only with gossip, and --cluster is not when --pool-name is given:
	// ParseConfig and New default it to the pool's name; Validate sees it empty here.)
	for _, want := range []string{"--cluster is required", `--listen="8080": want host:port`,
		"exactly one of --endpoints, --endpoints-file or --pool-name", "--max-attempts must be at least 1", "--queue-ttl must be positive",
		"--min-priority=5 is above --max-priority=1", "--gossip-join needs --gossip-bind", `--log-format="xml"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 8 {
		t.Errorf("%d problems, want 8:\n%v", n, err)
	}
}
