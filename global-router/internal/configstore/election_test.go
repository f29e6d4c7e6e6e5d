package configstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd/etcdtest"
)

func TestElectionConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*configstore.ElectionConfig)
		valid bool
	}{
		{"default", func(*configstore.ElectionConfig) {}, true},
		{"no name", func(c *configstore.ElectionConfig) { c.Name = "" }, false},
		{"slash in name", func(c *configstore.ElectionConfig) { c.Name = "a/b" }, false},
		{"no candidate", func(c *configstore.ElectionConfig) { c.Candidate = "" }, false},
		{"short ttl", func(c *configstore.ElectionConfig) { c.TTL = 500 * time.Millisecond }, false},
		{"no retry", func(c *configstore.ElectionConfig) { c.RetryInterval = 0 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := configstore.DefaultElectionConfig("dns-sync", "r1")
			tt.edit(&cfg)
			err := cfg.Validate()
			if (err == nil) != tt.valid || (err != nil && !errors.Is(err, configstore.ErrInvalid)) {
				t.Fatalf("Validate = %v, want valid=%v", err, tt.valid)
			}
		})
	}
}

type candidate struct {
	e    *configstore.Elector
	stop context.CancelFunc
	done chan error
}

func startCandidate(t *testing.T, cli *clientv3.Client, name string) *candidate {
	t.Helper()
	cfg := configstore.DefaultElectionConfig("dns-sync", name)
	cfg.TTL = time.Second
	cfg.RetryInterval = 100 * time.Millisecond
	e, err := configstore.NewElector(cli, cfg, etcdtest.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &candidate{e: e, stop: cancel, done: make(chan error, 1)}
	go func() { c.done <- e.Run(ctx) }()
	t.Cleanup(func() { c.halt(t) })
	return c
}

// halt stops the candidate's Run and checks it returned nil; safe to call twice.
func (c *candidate) halt(t *testing.T) {
	c.stop()
	if err, ok := <-c.done; ok {
		close(c.done)
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	}
}

// oneLeader waits until exactly one of cs leads and returns its index.
func oneLeader(t *testing.T, cs ...*candidate) int {
	t.Helper()
	leader := -1
	poll.Until(t, waitTimeout, func() bool {
		n := 0
		for i, c := range cs {
			if c.e.IsLeader() {
				n, leader = n+1, i
			}
		}
		return n == 1
	}, "exactly one leader")
	return leader
}

func TestElectionFailoverOnResign(t *testing.T) {
	ctx := testCtx(t)
	ns := newNamespace()
	cs := []*candidate{
		startCandidate(t, nsClientIn(t, shared, ns), "a"),
		startCandidate(t, nsClientIn(t, shared, ns), "b"),
	}
	first := oneLeader(t, cs...)
	if got, err := cs[0].e.Leader(ctx); err != nil || got != []string{"a", "b"}[first] {
		t.Fatalf("Leader() = %q, %v; want %q", got, err, []string{"a", "b"}[first])
	}
	// Both stay put: the follower does not take over while the leader lives.
	time.Sleep(300 * time.Millisecond)
	if oneLeader(t, cs...) != first {
		t.Fatal("leadership moved without a resignation")
	}
	cs[first].halt(t)
	other := 1 - first
	poll.Until(t, waitTimeout, func() bool { return cs[other].e.IsLeader() }, "failover after resign")
	if cs[first].e.IsLeader() {
		t.Fatal("the resigned candidate still claims leadership")
	}
	cs[other].halt(t)
	poll.Until(t, waitTimeout, func() bool {
		_, err := cs[other].e.Leader(ctx)
		return errors.Is(err, configstore.ErrNotFound)
	}, "no leader after both resign")
}

// TestElectionFailoverOnPartition: a leader cut off from etcd steps down once its lease expires,
// and the other candidate takes over.
func TestElectionFailoverOnPartition(t *testing.T) {
	t.Parallel()
	ns := newNamespace()
	proxy := startProxy(t, shared.Endpoints()[0][len("http://"):])
	viaProxy := nsClientAt(t, []string{"http://" + proxy.addr()}, ns)
	a := startCandidate(t, viaProxy, "a")
	poll.Until(t, waitTimeout, a.e.IsLeader, "a leads")
	b := startCandidate(t, nsClientIn(t, shared, ns), "b")
	time.Sleep(200 * time.Millisecond)
	if b.e.IsLeader() {
		t.Fatal("b leads while a holds the leadership")
	}
	proxy.cut(true)
	poll.Until(t, waitTimeout, b.e.IsLeader, "b takes over")
	poll.Until(t, waitTimeout, func() bool { return !a.e.IsLeader() }, "a steps down")
	proxy.cut(false)
}
