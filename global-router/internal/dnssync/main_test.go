package dnssync_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd/etcdtest"
)

// shared is one real etcd member for the package; each test works in a namespace of its own.
var shared *etcdtest.Cluster

func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m, 1, &shared)) }

var nsCounter atomic.Int64

// nsClient returns an etcd client whose keys live under the namespace ns.
func nsClient(t *testing.T, ns string) *clientv3.Client {
	t.Helper()
	return etcdtest.NamespacedClient(t, shared.Endpoints(), ns)
}

func newNamespace() string { return fmt.Sprintf("/dnssync-test-%d", nsCounter.Add(1)) }

// runStore starts a config store over cli for the test and waits for its first load.
func runStore(t *testing.T, cli *clientv3.Client) *configstore.Store {
	t.Helper()
	s, err := configstore.New(cli, etcdtest.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	goRun(t, s.Run)
	poll.Until(t, waitTimeout, func() bool { return s.Snapshot().Loaded() }, "config loaded")
	return s
}

// goRun runs a component until the test ends, then checks it returned nil. The returned
// function stops it early (it is safe to call twice).
func goRun(t *testing.T, run func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var stopped atomic.Bool
	stop = func() {
		cancel()
		if stopped.Swap(true) {
			return
		}
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// newElector returns a candidate of the election name over cli.
func newElector(t *testing.T, cli *clientv3.Client, name, candidate string) *configstore.Elector {
	t.Helper()
	cfg := configstore.DefaultElectionConfig(name, candidate)
	cfg.TTL = time.Second
	cfg.RetryInterval = 100 * time.Millisecond
	e, err := configstore.NewElector(cli, cfg, etcdtest.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// newClient returns a real Route 53 client of the loopback endpoint url: static credentials,
// at most two SDK attempts per call with short pauses.
func newClient(url string) *route53.Client {
	return route53.New(route53.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		BaseEndpoint: aws.String(url),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 2
			o.MaxBackoff = 20 * time.Millisecond
		}),
	})
}

// waitTimeout bounds every wait for a condition in these tests: generous, as a busy machine
// is slow.
const waitTimeout = 20 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
