package ctl_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/switchyard-dev/switchyard/contract/poll"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
	"github.com/switchyard-dev/switchyard/global-router/internal/ctl"
)

func TestTenantCommands(t *testing.T) {
	f := newFixture(t)
	d := sha256.Sum256([]byte("sk-acme"))
	digest := hex.EncodeToString(d[:])

	out := f.run(
		t,
		"tenant",
		"set",
		"acme",
		"--tokens-per-minute=60000",
		"--requests-per-second=2.5",
		"--max-concurrent=4",
		"--api-key-sha256="+digest,
	)
	if !strings.HasPrefix(out, "tenant acme stored at revision ") {
		t.Fatalf("tenant set: %q", out)
	}
	// set again replaces whatever is stored, at the revision it reads.
	out = f.run(t, "tenant", "set", "acme", "--tokens-per-minute=1000", "-o", "json")
	var put adminv1.PutTenantResponse
	if err := protojson.Unmarshal(
		[]byte(out),
		&put,
	); err != nil || put.GetTenant().GetTokensPerMinute() != 1000 ||
		len(put.GetTenant().GetApiKeySha256()) != 0 {
		t.Fatalf("second set: %v %s", err, out)
	}
	poll.Until(t, admintest.WaitTimeout, func() bool {
		tn, ok := f.env.Store.Snapshot().Tenant("acme")
		return ok && tn.GetTokensPerMinute() == 1000
	}, "acme in the router's view")

	table := f.run(t, "tenant", "get", "acme")
	if lines := strings.Split(
		strings.TrimSpace(table),
		"\n",
	); len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") ||
		!strings.Contains(lines[1], "1000") {
		t.Fatalf("tenant get:\n%s", table)
	}
	if got := f.run(t, "tenant", "list"); !strings.Contains(got, "acme") {
		t.Fatalf("tenant list:\n%s", got)
	}

	for name, args := range map[string][]string{
		"stale revision":      {"tenant", "set", "acme", "--revision=1"},
		"negative limit":      {"tenant", "set", "acme", "--max-concurrent=-1"},
		"key in clear":        {"tenant", "set", "acme", "--api-key-sha256=sk-acme"},
		"bad name":            {"tenant", "set", "a/b"},
		"missing name":        {"tenant", "get", "nobody"},
		"delete stale":        {"tenant", "delete", "acme", "--revision=1"},
		"flag of another cmd": {"tenant", "get", "acme", "--max-concurrent=1"},
		"no subcommand":       {"tenant"},
	} {
		t.Run(name, func(t *testing.T) {
			r := ctlRun(append([]string{f.addr, f.tokenFile}, args...)...)
			if r.code == 0 {
				t.Fatalf("%v succeeded: %s", args, r.stdout)
			}
			if r.code != ctl.ExitUsage && r.code != 1 {
				t.Fatalf("%v exit %d", args, r.code)
			}
		})
	}

	if out := f.run(t, "tenant", "delete", "acme"); out != "tenant acme deleted\n" {
		t.Fatalf("tenant delete: %q", out)
	}
	if r := ctlRun(f.addr, f.tokenFile, "tenant", "get", "acme"); r.code != 1 || !strings.Contains(r.stderr, "NOT_FOUND") {
		t.Fatalf("get after delete: %+v", r)
	}
}
