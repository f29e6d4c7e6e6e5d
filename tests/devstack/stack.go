package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Options are the command-line settings of the stack.
type Options struct {
	// DataDir holds logs, generated fleet files and the admin token.
	DataDir string
	// BinDir is where the Switchyard binaries are (default: beside devstack, then PATH).
	BinDir string
	// ReadyTimeout bounds the wait for each component to become healthy.
	ReadyTimeout time.Duration
	// StopGrace bounds each component's clean shutdown before it is killed.
	StopGrace time.Duration
	// Out receives the human summary (addresses and commands to paste).
	Out io.Writer
}

// Stack is a running local stack.
type Stack struct {
	cfg   *Config
	opt   Options
	procs []*process
	// Gateways maps cluster name to its gateway's OpenAI endpoint (http://host:port).
	Gateways map[string]string
	// Pods maps cluster name to its simulated pods' addresses.
	Pods map[string][]string
}

// Run starts the stack, prints how to use it, and blocks until ctx ends; then it stops every
// component in reverse order of start and returns the first shutdown error.
func Run(ctx context.Context, cfg *Config, opt Options) error {
	s := &Stack{cfg: cfg, opt: opt, Gateways: map[string]string{}, Pods: map[string][]string{}}
	if err := os.MkdirAll(filepath.Join(opt.DataDir, "logs"), 0o755); err != nil {
		return fmt.Errorf("devstack: %w", err)
	}
	err := s.start(ctx)
	if err == nil {
		s.printSummary()
		err = s.wait(ctx)
	}
	return errors.Join(err, s.stopAll())
}

func (s *Stack) start(ctx context.Context) error {
	for _, r := range s.cfg.Regions {
		for _, c := range r.Clusters {
			if err := s.startCluster(ctx, r, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// startCluster starts a cluster's simulated pods (one modelsim --fleet process) and its gateway.
func (s *Stack) startCluster(ctx context.Context, r Region, c Cluster) error {
	fleetFile, pods, err := s.writeFleet(c)
	if err != nil {
		return err
	}
	s.Pods[c.Name] = pods
	if _, err := s.launch(ctx, tierPods, "modelsim-"+c.Name, "modelsim", "http://"+pods[0]+"/health",
		"--fleet="+fleetFile); err != nil {
		return err
	}
	listen, err := freePort()
	if err != nil {
		return err
	}
	metrics, err := freePort()
	if err != nil {
		return err
	}
	extProc, err := freePort()
	if err != nil {
		return err
	}
	if _, err := s.launch(ctx, tierGateway, "gateway-"+c.Name, "cluster-gateway", "http://"+metrics+"/healthz",
		"--cluster="+c.Name, "--region="+r.Name, "--listen="+listen, "--metrics-listen="+metrics,
		"--ext-proc-listen="+extProc, "--endpoints="+strings.Join(pods, ","),
		"--profile="+s.cfg.Profile); err != nil {
		return err
	}
	s.Gateways[c.Name] = "http://" + listen
	return nil
}

// launch starts one binary and waits until its health URL answers.
func (s *Stack) launch(ctx context.Context, tier int, name, binary, health string, args ...string) (*process, error) {
	bin, err := findBinary(s.opt.BinDir, binary)
	if err != nil {
		return nil, err
	}
	p := &process{tier: tier, name: name, bin: bin, args: args, health: health,
		logPath: filepath.Join(s.opt.DataDir, "logs", name+".log")}
	if err := p.start(); err != nil {
		return nil, err
	}
	s.procs = append(s.procs, p)
	if err := p.waitHealthy(ctx, s.opt.ReadyTimeout); err != nil {
		return nil, err
	}
	return p, nil
}

// wait blocks until ctx ends or a component exits on its own (an error: the stack is broken).
func (s *Stack) wait(ctx context.Context) error {
	exited := make(chan error, len(s.procs))
	for _, p := range s.procs {
		go func() {
			select {
			case err := <-p.done:
				exited <- fmt.Errorf("%s exited unexpectedly (%v); see %s", p.name, err, p.logPath)
			case <-ctx.Done():
			}
		}()
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-exited:
		return err
	}
}

// stopAll stops every component: routers first, then gateways, then simulated pods, so each tier
// drains its in-flight requests while the tier behind it still serves. Within a tier the
// components stop concurrently.
func (s *Stack) stopAll() error {
	var errs []error
	for tier := tierRouter; tier >= tierPods; tier-- {
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		for _, p := range s.procs {
			if p.tier != tier {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := p.stop(s.opt.StopGrace); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	return errors.Join(errs...)
}

// Tiers of the stack, in start order.
const (
	tierPods = iota
	tierGateway
	tierRouter
)
