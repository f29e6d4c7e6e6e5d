// Package gossiptest runs in-process gossip pools on 127.0.0.1 for tests and benchmarks of the
// gossip library and of its consumers: each node is a real gossip.Node on a free loopback port,
// encrypted with a fixed test key unless a test chooses otherwise.
package gossiptest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/gossip"
)

// TestKey is the AES-256 key test pools use by default. Never use it outside tests.
var TestKey = []byte("switchyard-gossiptest-key-32byte")

// RelaxedTimings returns protocol periods for large pools on a busy machine (or under the race
// detector): gossip as fast as FastTimings, but failure detection patient enough that CPU
// starvation does not get live nodes declared dead.
func RelaxedTimings() gossip.Timings {
	t := FastTimings()
	t.GossipInterval = 100 * time.Millisecond
	t.ProbeInterval = 2 * time.Second
	t.ProbeTimeout = 1500 * time.Millisecond
	t.SuspicionMult = 6
	t.PushPullInterval = 5 * time.Second
	t.TCPTimeout = 5 * time.Second
	return t
}

// FastTimings returns protocol periods short enough for tests: failures are detected within a
// few seconds and gossip rounds run every 50 ms.
func FastTimings() gossip.Timings {
	return gossip.Timings{
		GossipInterval:      50 * time.Millisecond,
		GossipNodes:         4,
		RetransmitMult:      3,
		DeltaRetransmitMult: 1,
		ProbeInterval:       300 * time.Millisecond,
		ProbeTimeout:        200 * time.Millisecond,
		SuspicionMult:       2,
		PushPullInterval:    2 * time.Second,
		TCPTimeout:          2 * time.Second,
		GossipToTheDeadTime: 2 * time.Second,
		UDPBufferSize:       1400,
	}
}

// Config returns the configuration of test node i: a gateway named "node-NN" of cluster "cNN" in
// region "r1", on 127.0.0.1 with a free port, FastTimings, a 1 s summary TTL and TestKey.
func Config(i int) gossip.Config {
	c := gossip.DefaultLANConfig()
	c.NodeName = fmt.Sprintf("node-%02d", i)
	c.Role = gossip.RoleGateway
	c.Cluster = fmt.Sprintf("c%02d", i)
	c.Region = "r1"
	c.AdvertiseURL = fmt.Sprintf("http://node-%02d.test:8080", i)
	c.BindAddr = "127.0.0.1"
	c.BindPort = 0
	c.Keys = [][]byte{TestKey}
	c.Timings = FastTimings()
	c.SummaryTTL = time.Second
	c.JoinBackoffMin = 50 * time.Millisecond
	c.JoinBackoffMax = 500 * time.Millisecond
	c.LeaveTimeout = 500 * time.Millisecond
	return c
}

// Pool is a set of running nodes. Its methods are safe for use from one test goroutine.
type Pool struct {
	tb    testing.TB
	mu    sync.Mutex
	nodes []*running
}

type running struct {
	node   *gossip.Node
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// Start runs n nodes, configured by Config(i) and then configure (which may be nil), joins nodes
// 1..n-1 to node 0 (concurrently), and stops them all when the test ends. Node i is Node(i).
func Start(tb testing.TB, n int, configure func(i int, c *gossip.Config)) *Pool {
	tb.Helper()
	p := &Pool{tb: tb, nodes: make([]*running, n)}
	tb.Cleanup(p.StopAll)
	configs := make([]gossip.Config, n)
	for i := range configs {
		configs[i] = Config(i)
	}
	if n == 0 {
		return p
	}
	if configure != nil {
		configure(0, &configs[0])
	}
	p.nodes[0] = p.start(configs[0])
	seed := p.nodes[0].node.Addr()
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		configs[i].Seeds = []string{seed}
		if configure != nil {
			configure(i, &configs[i])
		}
		wg.Go(func() { p.nodes[i] = p.start(configs[i]) })
	}
	wg.Wait()
	for _, r := range p.nodes {
		if r == nil {
			tb.FailNow()
		}
	}
	return p
}

// Add starts one more node with configuration c and waits until it has bound its sockets.
func (p *Pool) Add(c gossip.Config) *gossip.Node {
	p.tb.Helper()
	r := p.start(c)
	if r == nil {
		p.tb.FailNow()
	}
	p.mu.Lock()
	p.nodes = append(p.nodes, r)
	p.mu.Unlock()
	return r.node
}

// start runs one node; it reports a failure with Errorf and returns nil, so that it may run on
// any goroutine.
func (p *Pool) start(c gossip.Config) *running {
	node, err := gossip.New(c)
	if err != nil {
		p.tb.Errorf("gossiptest: new node %s: %v", c.NodeName, err)
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{node: node, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- node.Run(ctx) }()
	select {
	case <-node.Ready():
		return r
	case err := <-r.done:
		p.tb.Errorf("gossiptest: node %s stopped at start: %v", c.NodeName, err)
	case <-time.After(30 * time.Second):
		p.tb.Errorf("gossiptest: node %s did not start", c.NodeName)
	}
	cancel()
	return nil
}

// Node returns the i-th node started.
func (p *Pool) Node(i int) *gossip.Node {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nodes[i].node
}

// Len returns the number of nodes started (running or stopped).
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.nodes)
}

// Seed returns node 0's gossip address.
func (p *Pool) Seed() string { return p.Node(0).Addr() }

// Stop stops node i (gracefully, unless its config set SkipLeave) and waits for Run to return.
// Stopping a stopped node does nothing.
func (p *Pool) Stop(i int) {
	p.tb.Helper()
	p.mu.Lock()
	r := p.nodes[i]
	p.mu.Unlock()
	if err := r.stop(); err != nil {
		p.tb.Errorf("gossiptest: %v", err)
	}
}

// StopAll stops every node still running, concurrently.
func (p *Pool) StopAll() {
	p.mu.Lock()
	nodes := append([]*running(nil), p.nodes...)
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range nodes {
		if r == nil {
			continue
		}
		wg.Go(func() {
			if err := r.stop(); err != nil {
				p.tb.Errorf("gossiptest: %v", err)
			}
		})
	}
	wg.Wait()
}

// stop cancels the node's Run and waits for it, once; later calls return the first result.
func (r *running) stop() error {
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				r.err = fmt.Errorf("node %s: %w", r.node.Name(), err)
			}
		case <-time.After(30 * time.Second):
			r.err = fmt.Errorf("node %s did not stop", r.node.Name())
		}
	})
	return r.err
}

// AllMembersAlive reports whether every given node sees want alive members.
func AllMembersAlive(nodes []*gossip.Node, want int) bool {
	for _, n := range nodes {
		alive := 0
		for _, m := range n.Members() {
			if m.State == gossip.StateAlive {
				alive++
			}
		}
		if alive != want {
			return false
		}
	}
	return true
}
