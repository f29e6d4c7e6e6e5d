package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/harness"
	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/fleet"
)

// regionalStack is one router mode's system under test, laid out like the local stack: per
// cluster an in-process modelsim fleet behind its own cluster-gateway process, all gateways in one
// gossip pool, and per region a global-router process with --routing-mode set to the mode. The
// first router embeds the stack's etcd and the others use it.
type regionalStack struct {
	mode    string
	dir     string // secrets and router data, removed at close
	keyFile string
	token   string
	seed    string // gossip address of the first gateway
	etcd    string // client address of the etcd embedded in the first router
	fleets  []*fleet.Fleet
	gws     []*harness.Process
	gwStats []string // the gateways' metrics addresses
	routers []*regionRouter
	stop    context.CancelFunc
	done    chan error
}

// regionRouter is one region's router in a regionalStack.
type regionRouter struct {
	region, url, metrics, admin string
	proc                        *harness.Process
}

// startRegionalStack starts every cluster, then every router, and waits until each router sees
// every cluster with a fresh summary.
func startRegionalStack(ctx context.Context, cfg *Config, w *workload.Workload, mode string) (*regionalStack, error) {
	dir, err := os.MkdirTemp("", "switchyard-bench-"+mode+"-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	st := &regionalStack{mode: mode, dir: dir, stop: cancel, done: make(chan error, cfg.Scenario.Pods())}
	if err := st.writeSecrets(); err != nil {
		st.close()
		return nil, err
	}
	clusters := 0
	for _, r := range cfg.Scenario.Regions {
		for _, c := range r.Clusters {
			if err := st.startCluster(ctx, fctx, cfg, w, r.Name, c); err != nil {
				st.close()
				return nil, err
			}
			clusters++
		}
	}
	for i, r := range cfg.Scenario.Regions {
		if err := st.startRouter(ctx, cfg, i, r.Name); err != nil {
			st.close()
			return nil, err
		}
	}
	for _, rr := range st.routers {
		if err := harness.WaitClusters(ctx, rr.admin, st.token, clusters, 60*time.Second); err != nil {
			st.close()
			return nil, fmt.Errorf("bench: router %s/%s: %w", mode, rr.region, err)
		}
	}
	return st, nil
}

func (st *regionalStack) writeSecrets() error {
	key, tok := make([]byte, 32), make([]byte, 24)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	if _, err := rand.Read(tok); err != nil {
		return err
	}
	st.keyFile, st.token = filepath.Join(st.dir, "gossip.key"), hex.EncodeToString(tok)
	if err := os.WriteFile(st.keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return os.WriteFile(filepath.Join(st.dir, "admin-token"), []byte(st.token+"\n"), 0o600)
}

// startCluster starts a cluster's pods (in process, run until fctx ends) and its gateway.
func (st *regionalStack) startCluster(
	ctx, fctx context.Context,
	cfg *Config,
	w *workload.Workload,
	region string,
	c Cluster,
) error {
	cfgs, _ := fleetConfigs(Scenario{Pools: c.Pools}, w, cfg.TimeScale)
	cfg.podSettings(cfgs)
	f, err := fleet.New(cfgs, cfg.Logger.With("mode", st.mode, "cluster", c.Name))
	if err != nil {
		return err
	}
	st.fleets = append(st.fleets, f)
	go func() { st.done <- f.Run(fctx) }()
	if err := f.Ready(ctx); err != nil {
		return err
	}
	addrs, err := freePorts(3)
	if err != nil {
		return err
	}
	listen, metrics, gossipAddr := addrs[0], addrs[1], addrs[2]
	args := []string{
		"--cluster=" + c.Name,
		"--region=" + region,
		"--listen=" + listen,
		"--metrics-listen=" + metrics,
		"--ext-proc-listen=",
		"--grpc-health-port=0",
		"--endpoints=" + strings.Join(f.Addrs(), ","),
		"--endpoint-header-address", // answers are attributed to the simulated pods by address (x-switchyard-endpoint)
		"--profile=default",
		"--scrape-interval=" + scaled(cfg, cfg.ScrapeInterval),
		"--staleness=" + scaled(cfg, 2*time.Second),
		"--queue-ttl=" + scaled(cfg, 10*time.Second),
		"--gossip-bind=" + gossipAddr,
		"--gossip-key-file=" + st.keyFile,
		"--advertise-url=http://" + listen,
		"--log-level=" + cfg.logLevel(),
	}
	if st.seed == "" {
		st.seed = gossipAddr
	} else {
		args = append(args, "--gossip-join="+st.seed)
	}
	p, err := st.launch(ctx, cfg, "gateway-"+c.Name, cfg.GatewayBin, "http://"+metrics+"/readyz", args)
	if err != nil {
		return err
	}
	st.gws = append(st.gws, p)
	st.gwStats = append(st.gwStats, metrics)
	return waitModel(ctx, "http://"+listen, 30*time.Second)
}

// startRouter starts region's router in the stack's mode.
func (st *regionalStack) startRouter(ctx context.Context, cfg *Config, i int, region string) error {
	addrs, err := freePorts(5)
	if err != nil {
		return err
	}
	rr := &regionRouter{region: region, url: "http://" + addrs[0], metrics: addrs[1], admin: "http://" + addrs[2]}
	args := []string{"--region=" + region, "--listen=" + addrs[0], "--metrics-listen=" + addrs[1],
		"--admin-listen=" + addrs[2], "--gossip-bind=" + addrs[3], "--gossip-join=" + st.seed,
		"--gossip-key-file=" + st.keyFile, "--gossip-profile=lan",
		"--admin-token-file=" + filepath.Join(st.dir, "admin-token"), "--node-name=router-" + region,
		"--simulated-rtt=" + rttFlag(cfg, region), "--data-dir=" + filepath.Join(st.dir, "router-"+region),
		"--routing-mode=" + st.mode, "--queue-wait=" + scaled(cfg, 2*time.Second), "--log-level=" + cfg.logLevel()}
	if i == 0 {
		st.etcd = addrs[4]
		args = append(args, "--embedded-etcd-listen="+addrs[4])
	} else {
		args = append(args, "--etcd-endpoints=http://"+st.etcd)
	}
	rr.proc, err = st.launch(ctx, cfg, "router-"+region, cfg.RouterBin, "http://"+rr.metrics+"/readyz", args)
	if err != nil {
		return err
	}
	st.routers = append(st.routers, rr)
	return nil
}

func (st *regionalStack) launch(
	ctx context.Context,
	cfg *Config,
	name, bin, health string,
	args []string,
) (*harness.Process, error) {
	p := &harness.Process{Name: st.mode + "/" + name, Bin: bin, Args: args, Health: health,
		LogPath: filepath.Join(cfg.LogDir, fmt.Sprintf("%s-%s-%s.log", cfg.Scenario.Name, st.mode, name))}
	if err := p.Start(); err != nil {
		return nil, err
	}
	if err := p.WaitHealthy(ctx, 60*time.Second); err != nil {
		_ = p.Stop(5 * time.Second)
		return nil, err
	}
	return p, nil
}

// target is the loadgen target of this stack: each region's clients send to their region's router.
func (st *regionalStack) target() loadgen.Target {
	t := loadgen.Target{Name: st.mode, RegionURLs: map[string]string{}}
	for _, rr := range st.routers {
		t.RegionURLs[rr.region] = rr.url
	}
	return t
}

// close stops the routers, then the gateways, then the pods, and removes the stack's directory.
func (st *regionalStack) close() error {
	var errs []error
	for _, group := range [][]*harness.Process{routerProcs(st.routers), st.gws} {
		for _, p := range group {
			if err := p.Stop(15 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	st.stop()
	for range st.fleets {
		select {
		case err := <-st.done:
			if err != nil {
				errs = append(errs, err)
			}
		case <-time.After(40 * time.Second):
			errs = append(errs, errors.New("a fleet did not stop"))
		}
	}
	errs = append(errs, os.RemoveAll(st.dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench: stop %s: %w", st.mode, err)
	}
	return nil
}

func routerProcs(rs []*regionRouter) []*harness.Process {
	out := make([]*harness.Process, len(rs))
	for i, r := range rs {
		out[i] = r.proc
	}
	return out
}

// counters reads the stack's counters once from every router's and gateway's /metrics: answered
// overflow by choice (summed), reasons for leaving and forward attempts (by router region), and
// the gateways' TTFT prediction ratio (summed).
func (st *regionalStack) counters() ModeFigures {
	m := ModeFigures{Mode: st.mode, OverflowAnswered: ChoiceCounts{}, LeftBecause: map[string]ChoiceCounts{},
		Attempts: map[string]ChoiceCounts{}, PredictionRatio: ChoiceCounts{}, EstimateRatio: map[string]ChoiceCounts{}}
	for _, rr := range st.routers {
		mfs := scrapeMetrics(rr.metrics)
		m.OverflowAnswered = m.OverflowAnswered.add(byLabel(mfs, "switchyard_router_overflow_answered_total", "choice"))
		m.LeftBecause[rr.region] = byLabel(mfs, "switchyard_router_overflow_reason_total", "reason")
		m.Attempts[rr.region] = byLabel(mfs, "switchyard_router_attempts_total", "result")
		m.EstimateRatio = addByKey(m.EstimateRatio, histogramBucketsBy(mfs, "switchyard_router_ttft_estimate_ratio", "route"))
	}
	for _, addr := range st.gwStats {
		m.PredictionRatio = m.PredictionRatio.add(
			histogramBuckets(scrapeMetrics(addr), "switchyard_gateway_ttft_prediction_ratio"),
		)
	}
	return m
}

// scaled renders d (simulated time) in real time.
func scaled(cfg *Config, d time.Duration) string {
	return time.Duration(float64(d) * cfg.TimeScale).String()
}

// rttFlag renders the router's --simulated-rtt: the round trip to every other region, in real time.
func rttFlag(cfg *Config, region string) string {
	var parts []string
	for _, r := range cfg.Scenario.Regions {
		if d := cfg.Scenario.RTT(region, r.Name); r.Name != region && d > 0 {
			parts = append(parts, r.Name+"="+scaled(cfg, d))
		}
	}
	return strings.Join(parts, ",")
}

func freePorts(n int) ([]string, error) {
	out := make([]string, n)
	for i := range out {
		p, err := harness.FreePort()
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}
