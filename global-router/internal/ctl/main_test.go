package ctl_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
	"github.com/switchyard-dev/switchyard/global-router/internal/ctl"
	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd/etcdtest"
)

// shared is one etcd member for the whole package; each environment's store lives in its own
// namespace.
var shared *etcdtest.Cluster

func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m, 1, &shared)) }

// fixture is a running admin API and the flags that reach it.
type fixture struct {
	env       *admintest.Env
	addr      string // --addr=...
	tokenFile string // --token-file=...
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	e := admintest.Start(t, shared)
	return &fixture{
		env:       e,
		addr:      "--addr=" + e.Server.URL,
		tokenFile: "--token-file=" + writeFile(t, "token", "  "+admintest.Token+"\n\n"),
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// result is one run of the CLI.
type result struct {
	code           int
	stdout, stderr string
}

// ctlRun runs the CLI in-process with args and no environment.
func ctlRun(args ...string) result {
	return ctlRunEnv(nil, args...)
}

func ctlRunEnv(env map[string]string, args ...string) result {
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := ctl.Run(ctx, args, func(k string) string { return env[k] }, &out, &errb)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// run runs the CLI against the fixture with the flags first and fails the test unless it succeeds.
func (f *fixture) run(t *testing.T, args ...string) string {
	t.Helper()
	r := ctlRun(append([]string{f.addr, f.tokenFile}, args...)...)
	if r.code != 0 {
		t.Fatalf("switchyardctl %v: exit %d, stderr %q", args, r.code, r.stderr)
	}
	return r.stdout
}
