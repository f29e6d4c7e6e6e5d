package admin_test

import (
	"context"
	"os"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin/admintest"
	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd/etcdtest"
)

// shared is one etcd member for the whole package; each environment's store lives in its own
// namespace.
var shared *etcdtest.Cluster

func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m, 1, &shared)) }

func newEnv(t *testing.T) *admintest.Env {
	t.Helper()
	return admintest.Start(t, shared)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantCode fails the test unless err carries code.
func wantCode(t *testing.T, err error, code connect.Code) {
	t.Helper()
	if connect.CodeOf(err) != code {
		t.Fatalf("error = %v (code %v), want code %v", err, connect.CodeOf(err), code)
	}
}
