package configstore_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd/etcdtest"
	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

// shared is one etcd member for the whole package; tests isolate themselves with namespaces.
var shared *etcdtest.Cluster

func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m, 1, &shared)) }

var nsCounter atomic.Int64

// nsClient returns a client of the etcd cluster c whose keys live in a namespace of their own, so
// tests sharing one etcd do not see each other's keys.
func nsClient(t *testing.T, c *etcdtest.Cluster) *clientv3.Client {
	t.Helper()
	return nsClientIn(t, c, newNamespace())
}

// newNamespace returns a key prefix no other test uses.
func newNamespace() string { return fmt.Sprintf("/test-%d", nsCounter.Add(1)) }

func nsClientIn(t *testing.T, c *etcdtest.Cluster, ns string) *clientv3.Client {
	t.Helper()
	return nsClientAt(t, c.Endpoints(), ns)
}

// nsClientAt returns a client of endpoints whose keys live under the namespace ns.
func nsClientAt(t testing.TB, endpoints []string, ns string) *clientv3.Client {
	t.Helper()
	return etcdtest.NamespacedClient(t, endpoints, ns)
}

// newStore returns a store over cli.
func newStore(t *testing.T, cli *clientv3.Client) *configstore.Store {
	t.Helper()
	s, err := configstore.New(cli, etcdtest.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runStore runs s until the test ends and waits for its first load.
func runStore(t *testing.T, s *configstore.Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil after cancel", err)
		}
	})
	poll.Until(t, waitTimeout, func() bool { return s.Snapshot().Loaded() }, "first load")
}

// startCluster starts a three-member etcd cluster for the test.
func startCluster(t *testing.T) *etcdtest.Cluster {
	t.Helper()
	return etcdtest.Start(t, 3)
}

// waitTimeout bounds every wait for a condition in these tests: generous, as a busy machine
// is slow.
const waitTimeout = 15 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// policyOf returns model's policy in v, the zero Policy (which matches no expectation of a
// stored or default policy) when v refuses it.
func policyOf(v *configstore.View, model string) routing.Policy {
	p, err := v.Policy(model)
	if err != nil {
		return routing.Policy{}
	}
	return p
}
