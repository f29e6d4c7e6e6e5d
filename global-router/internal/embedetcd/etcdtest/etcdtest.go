// Package etcdtest runs real embedded etcd for tests: a single member, or a cluster of several
// whose members can be stopped and restarted to exercise leader loss and etcd outages. Members
// listen on loopback free ports, skip fsync and log only errors.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/namespace"
	"go.uber.org/zap"

	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd"
)

// Cluster is a set of embedded etcd members started together. Its methods are safe for
// concurrent use.
type Cluster struct {
	mu      sync.Mutex
	cfgs    []embedetcd.Config
	servers []*embedetcd.Server // nil while a member is stopped
	logger  *slog.Logger
}

// New starts an n-member cluster with its data under dir and waits until it serves. Close it.
// Ports are picked free before the members start (a multi-member cluster's members must know
// each other's addresses); when another process takes one in between, New starts over on new
// ports, up to three times.
func New(ctx context.Context, dir string, n int) (*Cluster, error) {
	var err error
	for attempt := range 3 {
		var c *Cluster
		sub := dir
		if attempt > 0 {
			sub = filepath.Join(dir, fmt.Sprintf("retry%d", attempt))
		}
		if c, err = newCluster(ctx, sub, n); err == nil || !embedetcd.IsAddrInUse(err) {
			return c, err
		}
	}
	return nil, err
}

func newCluster(ctx context.Context, dir string, n int) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("etcdtest: %d members", n)
	}
	c := &Cluster{
		cfgs:    make([]embedetcd.Config, n),
		servers: make([]*embedetcd.Server, n),
		logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	}
	peers := make([]string, n)
	for i := range c.cfgs {
		cfg, err := memberConfig(filepath.Join(dir, fmt.Sprintf("m%d", i)), i)
		if err != nil {
			return nil, err
		}
		c.cfgs[i] = cfg
		peers[i] = cfg.Name + "=" + cfg.PeerURL
	}
	if n > 1 {
		for i := range c.cfgs {
			c.cfgs[i].InitialCluster = strings.Join(peers, ",")
		}
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if err := c.start(ctx, idx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func memberConfig(dir string, i int) (embedetcd.Config, error) {
	cfg := embedetcd.DefaultConfig(dir)
	cfg.Name = fmt.Sprintf("m%d", i)
	cfg.ClusterToken = "etcdtest"
	cfg.HeartbeatInterval = 50 * time.Millisecond
	cfg.ElectionTimeout = 500 * time.Millisecond
	cfg.CompactionRetention = 0
	cfg.LogLevel = slog.LevelError
	cfg.UnsafeNoFsync = true
	cfg.ReadyTimeout = 30 * time.Second
	for _, u := range []*string{&cfg.ClientURL, &cfg.PeerURL} {
		port, err := embedetcd.FreePort("127.0.0.1")
		if err != nil {
			return cfg, err
		}
		*u = fmt.Sprintf("http://127.0.0.1:%d", port)
	}
	return cfg, nil
}

// start starts the members idx concurrently (a multi-member cluster is ready only with a quorum).
func (c *Cluster) start(ctx context.Context, idx []int) error {
	errs := make([]error, len(idx))
	var wg sync.WaitGroup
	for k, i := range idx {
		wg.Go(func() {
			s, err := embedetcd.Start(ctx, c.cfgs[i], c.logger)
			if err != nil {
				errs[k] = err
				return
			}
			c.mu.Lock()
			c.servers[i] = s
			c.mu.Unlock()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Start starts an n-member cluster in a temporary directory and closes it when the test ends.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := New(ctx, t.TempDir(), n)
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Size returns the number of members.
func (c *Cluster) Size() int { return len(c.cfgs) }

// Endpoints returns every member's client URL, running or not.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.cfgs))
	for i, cfg := range c.cfgs {
		out[i] = cfg.ClientURL
	}
	return out
}

// Stop stops member i; it keeps its data and addresses for Restart.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	s := c.servers[i]
	c.servers[i] = nil
	c.mu.Unlock()
	if s != nil {
		s.Close()
	}
}

// Restart starts the stopped member i again on its data and addresses and waits until it serves.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	c.mu.Lock()
	running := c.servers[i] != nil
	c.mu.Unlock()
	if running {
		return fmt.Errorf("etcdtest: member %d is running", i)
	}
	return c.start(ctx, []int{i})
}

// Close stops every member. It is safe to call more than once.
func (c *Cluster) Close() {
	for i := range c.cfgs {
		c.Stop(i)
	}
}

// NewClient returns a client of the given endpoints that logs nothing and fails fast.
func NewClient(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
		Logger:               zap.NewNop(),
	})
}

// Client returns a client of every member, closed when the test ends.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := NewClient(c.Endpoints())
	if err != nil {
		t.Fatalf("etcdtest: client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// NamespacedClient returns a client of endpoints whose keys, watches and leases live under the
// prefix ns, closed when the test ends: tests that share one etcd isolate themselves with it.
func NamespacedClient(t testing.TB, endpoints []string, ns string) *clientv3.Client {
	t.Helper()
	cli, err := NewClient(endpoints)
	if err != nil {
		t.Fatalf("etcdtest: client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	cli.KV = namespace.NewKV(cli.KV, ns)
	cli.Watcher = namespace.NewWatcher(cli.Watcher, ns)
	cli.Lease = namespace.NewLease(cli.Lease, ns)
	return cli
}

var namespaces atomic.Int64

// UniqueNamespace returns a key prefix, starting with base, that no other call in this process
// returns.
func UniqueNamespace(base string) string {
	return fmt.Sprintf("/%s-%d-%d", base, time.Now().UnixNano(), namespaces.Add(1))
}

// Discard is a logger that drops everything, for components under test.
var Discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// Main runs a test package with one n-member cluster shared by all its tests: call it from
// TestMain as os.Exit(etcdtest.Main(m, 1, &shared)). The cluster is in *shared while the tests run
// and is stopped and removed afterwards; tests isolate themselves with key namespaces.
func Main(m *testing.M, n int, shared **Cluster) int {
	dir, err := os.MkdirTemp("", "etcdtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := New(ctx, dir, n)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	*shared = c
	return m.Run()
}
