package app_test

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/flagenv"
	"github.com/switchyard-dev/switchyard/global-router/internal/app"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the flags table of docs/router.md")

// TestFlagsDocUpToDate fails when docs/router.md's flags table is not the one Config's tags,
// usage table and defaults generate; `make generate` (this test with -update-docs) rewrites it.
func TestFlagsDocUpToDate(t *testing.T) {
	flagenv.CheckDoc(t, "../../../docs/router.md", flagenv.Markdown(app.Flags(), flagenv.Prefix), *updateDocs)
}

// Every flag is documented, and --help lists each with its variable and default.
func TestFlags(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range app.Flags() {
		if f.Usage == "" || seen[f.Name] {
			t.Errorf("--%s: empty or repeated", f.Name)
		}
		seen[f.Name] = true
	}
	for _, name := range []string{"region", "listen", "admin-listen", "metrics-listen", "etcd-endpoints", "data-dir",
		"gossip-bind", "gossip-join", "gossip-key-file", "admin-token-file", "dns-listen", "simulated-rtt", "config"} {
		if !seen[name] {
			t.Errorf("no --%s", name)
		}
	}
	var out strings.Builder
	if _, err := app.ParseFlags([]string{"--help"}, &out); err != app.ErrHelp {
		t.Fatal(err)
	}
	for _, want := range []string{"--admin-listen=:9090  (SWITCHYARD_ADMIN_LISTEN)",
		"--node-name=router-<region>-<hostname>", "--max-inflight-body-bytes=auto", "--config=  (SWITCHYARD_CONFIG)",
		"--require-cluster-identity  (SWITCHYARD_REQUIRE_CLUSTER_IDENTITY)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q:\n%s", want, out.String())
		}
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "router.conf")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The command line wins over the environment, the environment over --config, the file over the
// default.
func TestConfigPrecedence(t *testing.T) {
	file := writeFile(
		t,
		"region=us-east-1\ngossip-key-file=k\nlisten=:1\nqueue-wait=3s\netcd-endpoints=http://a:2379, http://b:2379\n"+
			"simulated-rtt=eu-west-1=80ms\n",
	)
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(c app.Config) bool
	}{
		{"file over default", []string{"--config=" + file}, nil, func(c app.Config) bool {
			return c.Listen == ":1" && c.QueueWait == 3*time.Second && c.AdminListen == ":9090" && len(c.EtcdEndpoints) == 2 &&
				c.SimulatedRTT["eu-west-1"] == 80*time.Millisecond
		}},
		{
			"environment over file",
			[]string{"--config=" + file},
			map[string]string{"SWITCHYARD_LISTEN": ":2", "SWITCHYARD_ETCD_ENDPOINTS": "http://c:2379"},
			func(c app.Config) bool {
				return c.Listen == ":2" && len(c.EtcdEndpoints) == 1 && c.QueueWait == 3*time.Second
			},
		},
		{
			"command line over environment",
			[]string{"--config=" + file, "--listen=:3"},
			map[string]string{"SWITCHYARD_LISTEN": ":2"},
			func(c app.Config) bool { return c.Listen == ":3" },
		},
		{"file named by the environment", nil, map[string]string{"SWITCHYARD_CONFIG": file},
			func(c app.Config) bool { return c.Region == "us-east-1" && c.Listen == ":1" }},
		{
			"unknown variables are ignored",
			[]string{"--config=" + file},
			map[string]string{"SWITCHYARD_NO_SUCH_FLAG": "x", "SWITCHYARD_ADDR": "http://x"},
			func(c app.Config) bool { return c.Listen == ":1" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			c, err := app.ParseFlags(tt.args, io.Discard)
			if err != nil || !tt.check(c) {
				t.Fatalf("config %+v, err %v", c, err)
			}
		})
	}
}

// A bad value names its flag and where it came from: the variable or the file's line.
func TestConfigBadValues(t *testing.T) {
	base := []string{"--region=r", "--gossip-key-file=k"}
	tests := []struct {
		name string
		env  map[string]string
		file string
		want []string
	}{
		{"environment", map[string]string{"SWITCHYARD_MAX_ATTEMPTS": "many"}, "",
			[]string{`environment SWITCHYARD_MAX_ATTEMPTS="many": invalid value for --max-attempts: want an integer`}},
		{
			"environment rtt",
			map[string]string{"SWITCHYARD_SIMULATED_RTT": "eu"},
			"",
			[]string{"SWITCHYARD_SIMULATED_RTT", "want region=duration"},
		},
		{"file line", nil, "# router\nqueue-wait=soon\n", []string{`:2: invalid value "soon" for --queue-wait`}},
		{"unknown flag in the file", nil, "admin-token=secret\n", []string{":1: unknown flag --admin-token"}},
		{
			"invalid after parsing",
			nil,
			"max-attempts=0\nrouting-mode=nearest\n",
			[]string{"--max-attempts: 0 must be >= 1", `--routing-mode: "nearest"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			args := base
			if tt.file != "" {
				args = append(append([]string(nil), base...), "--config="+writeFile(t, tt.file))
			}
			_, err := app.ParseFlags(args, io.Discard)
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
	c.Listen, c.MaxAttempts, c.GossipProfile, c.RoutingMode = "8080", 0, "moon", "nearest"
	c.TLSCertFile, c.DNSListen = "c", ":53"
	c.SimulatedRTT = map[string]time.Duration{"eu-west-1": -time.Second}
	err := c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		"--region is required",
		"--listen: address 8080: missing port",
		"--tls-cert-file and --tls-key-file must be given together",
		"--dns-config is required with --dns-listen",
		"--gossip-key-file is required",
		`--gossip-profile: "moon"`,
		"--max-attempts: 0 must be >= 1",
		`--routing-mode: "nearest"`,
		`--simulated-rtt: invalid entry "eu-west-1"=-1s`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != len(want) {
		t.Errorf("%d problems, want %d:\n%v", n, len(want), err)
	}
}

// The flags of the pool of aggregators apply with --gossip-aggregator only, need a port of their
// own, and a region key that loads.
func TestAggregatorFlags(t *testing.T) {
	base := []string{"--region=r", "--gossip-key-file=k"}
	tests := []struct {
		name string
		args []string
		want string // "" = valid
	}{
		{"off", nil, ""},
		{"aggregator", []string{"--gossip-aggregator", "--gossip-wan-join=10.0.0.1:7947"}, ""},
		{"WAN join without aggregator", []string{"--gossip-wan-join=10.0.0.1:7947"}, "need --gossip-aggregator"},
		{"region key without aggregator", []string{"--region-signing-key-file=x"}, "need --gossip-aggregator"},
		{"same port as the region pool", []string{"--gossip-aggregator", "--gossip-wan-bind=:7946"},
			"the pools need a port each"},
		{"bad WAN address", []string{"--gossip-aggregator", "--gossip-wan-bind=nowhere"}, "--gossip-wan-bind"},
		{"unreadable region key", []string{"--gossip-aggregator", "--region-signing-key-file=/nonexistent/key"},
			"--region-signing-key-file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := app.ParseFlags(append(append([]string(nil), base...), tt.args...), io.Discard)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want it to mention %q", err, tt.want)
			}
		})
	}
}
