package devstack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/switchyard-dev/switchyard/tests/harness"
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
	// Ready, when not nil, is closed once every component is up and every router lists every
	// cluster fresh and serving.
	Ready chan<- struct{}
	// Pprof starts every gateway and router with --enable-pprof (Go's runtime profiles on their
	// metrics ports).
	Pprof bool
}

// Stack is a running local stack.
type Stack struct {
	cfg   *Config
	opt   Options
	procs []*harness.Process
	// keyFile is the gossip keyring every node shares; tokenFile the routers' admin token.
	keyFile, tokenFile string
	// seed is the gossip address of the first gateway: every other node joins through it.
	seed string
	// etcd is the client URL of the etcd embedded in the first router.
	etcd string
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
		if opt.Ready != nil {
			close(opt.Ready)
		}
		err = s.wait(ctx)
	}
	err = errors.Join(err, s.stopAll())
	if opt.Out != nil {
		fmt.Fprintln(opt.Out, "Switchyard local stack stopped.")
	}
	return err
}

func (s *Stack) start(ctx context.Context) error {
	if err := s.writeSecrets(); err != nil {
		return err
	}
	for _, r := range s.cfg.Regions {
		for _, c := range r.Clusters {
			if err := s.startCluster(ctx, r, c); err != nil {
				return err
			}
		}
	}
	for i, r := range s.cfg.Regions {
		if err := s.startRouter(ctx, i, r); err != nil {
			return err
		}
	}
	return s.waitRouting(ctx)
}

// waitRouting waits until every router lists every cluster of the stack fresh and serving: a
// router is ready once it knows one fresh cluster, and a gateway's first summaries list no model,
// so a request sent as soon as the processes are up could leave its region.
func (s *Stack) waitRouting(ctx context.Context) error {
	tok, err := os.ReadFile(s.tokenFile)
	if err != nil {
		return fmt.Errorf("devstack: %w", err)
	}
	clusters := 0
	for _, r := range s.cfg.Regions {
		clusters += len(r.Clusters)
	}
	timeout := cmp.Or(s.opt.ReadyTimeout, time.Minute)
	for _, r := range s.cfg.Regions {
		if err := harness.WaitClusters(
			ctx,
			"http://"+r.Router.Admin,
			strings.TrimSpace(string(tok)),
			clusters,
			timeout,
		); err != nil {
			return fmt.Errorf("devstack: router %s: %w", r.Name, err)
		}
	}
	return nil
}

// startRouter starts a region's router on its fixed addresses. The first router embeds the
// stack's etcd; the others use it, as production routers share one etcd cluster.
func (s *Stack) startRouter(ctx context.Context, i int, r Region) error {
	metrics, err := harness.FreePort()
	if err != nil {
		return err
	}
	gossipAddr, err := harness.FreePort()
	if err != nil {
		return err
	}
	args := []string{"--region=" + r.Name, "--listen=" + r.Router.Listen, "--admin-listen=" + r.Router.Admin,
		"--metrics-listen=" + metrics, "--gossip-bind=" + gossipAddr, "--gossip-join=" + s.seed,
		"--gossip-key-file=" + s.keyFile, "--gossip-profile=lan", "--admin-token-file=" + s.tokenFile,
		"--node-name=router-" + r.Name, "--simulated-rtt=" + s.rttFlag(r.Name),
		"--data-dir=" + filepath.Join(s.opt.DataDir, "router-"+r.Name)}
	if s.opt.Pprof {
		args = append(args, "--enable-pprof")
	}
	if i == 0 {
		etcdAddr, err := harness.FreePort()
		if err != nil {
			return err
		}
		s.etcd = "http://" + etcdAddr
		args = append(args, "--embedded-etcd-listen="+etcdAddr)
	} else {
		args = append(args, "--etcd-endpoints="+s.etcd)
	}
	_, err = s.launch(ctx, tierRouter, "router-"+r.Name, "global-router", "http://"+metrics+"/readyz", args...)
	return err
}

// rttFlag renders the simulated round trips from region to every other region.
func (s *Stack) rttFlag(region string) string {
	var parts []string
	for _, r := range s.cfg.Regions {
		if d := s.cfg.RTT(region, r.Name); r.Name != region && d > 0 {
			parts = append(parts, r.Name+"="+d.String())
		}
	}
	return strings.Join(parts, ",")
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
	listen, err := harness.FreePort()
	if err != nil {
		return err
	}
	metrics, err := harness.FreePort()
	if err != nil {
		return err
	}
	extProc, err := harness.FreePort()
	if err != nil {
		return err
	}
	gossipAddr, err := harness.FreePort()
	if err != nil {
		return err
	}
	args := []string{
		"--cluster=" + c.Name,
		"--region=" + r.Name,
		"--listen=" + listen,
		"--metrics-listen=" + metrics,
		"--ext-proc-listen=" + extProc,
		"--grpc-health-port=0",
		"--endpoints=" + strings.Join(pods, ","),
		"--profile=" + s.cfg.Profile,
		"--gossip-bind=" + gossipAddr,
		"--gossip-key-file=" + s.keyFile,
		"--advertise-url=http://" + listen,
	}
	if s.opt.Pprof {
		args = append(args, "--enable-pprof")
	}
	if s.seed == "" {
		s.seed = gossipAddr // the first gateway starts the pool
	} else {
		args = append(args, "--gossip-join="+s.seed)
	}
	if _, err := s.launch(
		ctx,
		tierGateway,
		"gateway-"+c.Name,
		"cluster-gateway",
		"http://"+metrics+"/healthz",
		args...); err != nil {
		return err
	}
	s.Gateways[c.Name] = "http://" + listen
	return nil
}

// launch starts one binary and waits until its health URL answers.
func (s *Stack) launch(
	ctx context.Context,
	tier int,
	name, binary, health string,
	args ...string,
) (*harness.Process, error) {
	bin, err := harness.FindBinary(s.opt.BinDir, binary)
	if err != nil {
		return nil, err
	}
	p := &harness.Process{Tier: tier, Name: name, Bin: bin, Args: args, Health: health,
		LogPath: filepath.Join(s.opt.DataDir, "logs", name+".log")}
	if err := p.Start(); err != nil {
		return nil, err
	}
	s.procs = append(s.procs, p)
	if err := p.WaitHealthy(ctx, s.opt.ReadyTimeout); err != nil {
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
			case <-p.Exited():
				exited <- fmt.Errorf("%s exited unexpectedly (%v); see %s", p.Name, p.Wait(), p.LogPath)
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
			if p.Tier != tier {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := p.Stop(s.opt.StopGrace); err != nil {
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
