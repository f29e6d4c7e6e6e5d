package ctl_test

import (
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/global-router/internal/ctl"
)

func TestErrors(t *testing.T) {
	f := newFixture(t)
	empty := "--token-file=" + writeFile(t, "empty", " \n")
	wrong := "--token-file=" + writeFile(t, "wrong", "not-the-token")
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"no command", []string{f.addr}, ctl.ExitUsage, "no command"},
		{"unknown command", []string{f.addr, "frobnicate"}, ctl.ExitUsage, "unknown command"},
		{"unknown flag", []string{f.addr, "clusters", "--colour=red"}, ctl.ExitUsage, "colour"},
		{
			"flag of another command",
			[]string{f.addr, f.tokenFile, "members", "--revision=3"},
			ctl.ExitUsage,
			"members does not take --revision",
		},
		{"policy without subcommand", []string{f.addr, "policy"}, ctl.ExitUsage, "get, put, delete or list"},
		{"missing operand", []string{f.addr, f.tokenFile, "drain"}, ctl.ExitUsage, "missing CLUSTER"},
		{"two operands", []string{f.addr, f.tokenFile, "drain", "c1", "c2"}, ctl.ExitUsage, "exactly one"},
		{"bad output", []string{f.addr, f.tokenFile, "-o", "yaml", "clusters"}, ctl.ExitUsage, "table or json"},
		{
			"bad threshold",
			[]string{f.addr, f.tokenFile, "policy", "put", "--model=m", "--overflow-threshold=high"},
			ctl.ExitUsage,
			"--overflow-threshold",
		},
		{"put without model", []string{f.addr, f.tokenFile, "policy", "put", "--overflow-cap=3"}, ctl.ExitUsage, "no model"},
		{
			"missing policy file",
			[]string{f.addr, f.tokenFile, "policy", "put", "-f", "/nonexistent/policy.json"},
			ctl.ExitUsage,
			"-f",
		},
		{"explain without model", []string{f.addr, f.tokenFile, "explain"}, ctl.ExitUsage, "missing --model"},
		{"empty token file", []string{f.addr, empty, "clusters"}, ctl.ExitUsage, "is empty"},
		{"no token", []string{f.addr, "clusters"}, ctl.ExitAPIError, "UNAUTHENTICATED"},
		{"wrong token", []string{f.addr, wrong, "policy", "list"}, ctl.ExitAPIError, "UNAUTHENTICATED"},
		{"no token on a write", []string{f.addr, "drain", "c1"}, ctl.ExitAPIError, "UNAUTHENTICATED"},
		{
			"invalid policy",
			[]string{f.addr, f.tokenFile, "policy", "put", "--model=m", "--overflow-threshold=1.5"},
			ctl.ExitAPIError,
			"overflow_threshold",
		},
		{"invalid cluster name", []string{f.addr, f.tokenFile, "drain", "bad/name"}, ctl.ExitAPIError, "INVALID_ARGUMENT"},
		{"missing policy", []string{f.addr, f.tokenFile, "policy", "get", "nothing"}, ctl.ExitAPIError, "NOT_FOUND"},
		{
			"unreachable router",
			[]string{"--addr=http://127.0.0.1:1", f.tokenFile, "clusters"},
			ctl.ExitAPIError,
			"UNAVAILABLE",
		},
		{"bad address", []string{"--addr=ftp://x", f.tokenFile, "clusters"}, ctl.ExitUsage, "--addr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ctlRun(tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d mentioning %q", r.code, r.stderr, tt.code, tt.want)
			}
			if r.stdout != "" {
				t.Errorf("a failed command printed to stdout: %q", r.stdout)
			}
		})
	}
	if f.env.Store.Snapshot().ClusterDrained("c1") {
		t.Fatal("a rejected drain took effect")
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"clusters", "--help"}} {
		r := ctlRun(args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage: switchyardctl") {
			t.Fatalf("%v: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
}
