package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
)

// pool is one gossip pool of real nodes, on the simulated network or 127.0.0.1: gateways
// publishing and routers reading.
type pool struct {
	gateways []*gossip.Node
	routers  []*gossip.Node
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	errMu    sync.Mutex
	err      error
}

// regionName is the name of region i.
func regionName(i int) string { return fmt.Sprintf("region-%d", i) }

// nodeConfig is the configuration of one node of the pool.
func nodeConfig(cfg Config, name string, role gossip.Role, region int, sim *simNet) gossip.Config {
	c := gossip.DefaultLANConfig()
	c.NodeName, c.Role, c.Region = name, role, regionName(region)
	if role == gossip.RoleGateway {
		c.Cluster = "cluster-" + name
		c.AdvertiseURL = "http://" + name + ".gateway.test:8080"
	}
	c.BindAddr, c.BindPort = "127.0.0.1", 0
	c.Keys = [][]byte{gossiptest.TestKey}
	c.Timings = cfg.Timings
	if sim != nil {
		c.BindAddr, c.Transport = "10.0.0.0", sim.transport
	}
	if cfg.Dilation > 1 {
		t := &c.Timings
		for _, d := range []*time.Duration{&t.GossipInterval, &t.ProbeInterval, &t.ProbeTimeout, &t.PushPullInterval,
			&t.TCPTimeout, &t.GossipToTheDeadTime, &c.SummaryTTL, &c.FullSummaryInterval, &c.ForgetAfter} {
			*d = cfg.stretch(*d)
		}
		c.BroadcastBudget = int(float64(c.BroadcastBudget) / cfg.Dilation)
	}
	c.JoinBackoffMin, c.JoinBackoffMax = 100*time.Millisecond, 2*time.Second
	c.LeaveTimeout = 200 * time.Millisecond
	c.SkipLeave = true // the whole pool stops at once: nobody is left to tell
	return c
}

// startPool starts n gateways and cfg.Routers routers and waits until every router sees every
// node alive. The first node is the seed; the others join it and two more, in batches, so that a
// large pool forms without a join storm on one node.
func startPool(ctx context.Context, cfg Config, n int, sim *simNet, progress func(string)) (*pool, error) {
	ctx, cancel := context.WithCancel(ctx)
	p := &pool{cancel: cancel}
	var seeds []string
	start := func(c gossip.Config) (*gossip.Node, error) {
		c.Seeds = seeds
		node, err := gossip.New(c)
		if err != nil {
			return nil, fmt.Errorf("scale: node %s: %w", c.NodeName, err)
		}
		p.wg.Go(func() {
			if err := node.Run(ctx); err != nil {
				p.fail(fmt.Errorf("scale: node %s: %w", c.NodeName, err))
			}
		})
		select {
		case <-node.Ready():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if len(seeds) < 3 {
			seeds = append(seeds, node.Addr())
		}
		return node, nil
	}
	for i := range n {
		node, err := start(nodeConfig(cfg, fmt.Sprintf("gw-%04d", i), gossip.RoleGateway, i%cfg.Regions, sim))
		if err != nil {
			p.stop()
			return nil, err
		}
		p.gateways = append(p.gateways, node)
		if i%100 == 99 {
			progress(fmt.Sprintf("started %d of %d gateways", i+1, n))
			time.Sleep(cfg.stretch(500 * time.Millisecond)) // let the joins of this batch settle
		}
	}
	for i := range cfg.Routers {
		node, err := start(nodeConfig(cfg, fmt.Sprintf("router-%02d", i), gossip.RoleRouter, i%cfg.Regions, sim))
		if err != nil {
			p.stop()
			return nil, err
		}
		p.routers = append(p.routers, node)
	}
	if err := p.waitFormed(ctx, cfg.stretch(cfg.FormTimeout), progress); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// waitFormed waits until every router sees every node alive.
func (p *pool) waitFormed(ctx context.Context, timeout time.Duration, progress func(string)) error {
	want := len(p.gateways) + len(p.routers)
	deadline := time.Now().Add(timeout)
	last := time.Now()
	for {
		least := want
		for _, r := range p.routers {
			least = min(least, aliveCount(r))
		}
		if least == want {
			return nil
		}
		if err := p.failure(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("scale: pool of %d did not form within %v: a router sees %d alive", want, timeout, least)
		}
		if time.Since(last) > 10*time.Second {
			progress(fmt.Sprintf("forming: the slowest router sees %d of %d alive", least, want))
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func aliveCount(n *gossip.Node) int {
	alive := 0
	for _, m := range n.Members() {
		if m.State == gossip.StateAlive {
			alive++
		}
	}
	return alive
}

// all returns every node of the pool.
func (p *pool) all() []*gossip.Node {
	return append(append([]*gossip.Node(nil), p.gateways...), p.routers...)
}

func (p *pool) fail(err error) {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	if p.err == nil && !errors.Is(err, context.Canceled) {
		p.err = err
	}
}

// failure is the first error a node's Run returned.
func (p *pool) failure() error {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.err
}

// stop stops every node and waits for them.
func (p *pool) stop() {
	p.cancel()
	p.wg.Wait()
}
