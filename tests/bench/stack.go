package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"

	"github.com/switchyard-dev/switchyard/tests/harness"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/fleet"
	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

// stack is one policy's system under test: an in-process modelsim fleet behind its own
// cluster-gateway process.
type stack struct {
	policy  string
	fleet   *fleet.Fleet
	labels  []string // pod labels (profile-index), in fleet order
	gpus    []string // pod profiles, in fleet order
	roles   []string // pod roles ("" for both), in fleet order
	gateway *harness.Process
	url     string
	metrics string // the (first) gateway's metrics address
	// metricsAddrs are every gateway's metrics addresses (replicas have several); extra every
	// gateway process started, stopped by close; front the round-robin front of replicas.
	metricsAddrs []string
	extra        []*harness.Process
	front        *roundRobinFront
	stop         context.CancelFunc
	done         chan error
	// kvEvents is the host:port of the gateway's KV events SUB socket ("" when the scenario has
	// no KV events).
	kvEvents string
}

// fleetConfigs returns the pods of one policy's fleet; every policy gets the same seeds.
func fleetConfigs(sc Scenario, w *workload.Workload, timeScale float64) ([]server.Config, []string) {
	var cfgs []server.Config
	var labels []string
	for k, pool := range sc.Pools {
		role := ""
		if k < len(sc.roles) {
			role = sc.roles[k]
		}
		for i := range pool.Count {
			c := server.DefaultConfig()
			c.Listen, c.Profile, c.Model, c.TimeScale = "127.0.0.1:0", pool.Profile, w.Model, timeScale
			c.Seed = uint64(len(cfgs) + 1)
			c.MaxLoras = sc.MaxLoras
			if role != "" {
				c.Role = role
			}
			if sc.MaxLoras > 0 {
				for _, a := range w.Adapters {
					c.LoRAs = append(c.LoRAs, a.Name)
				}
			}
			cfgs = append(cfgs, c)
			if role != "" {
				labels = append(labels, fmt.Sprintf("%s-%s-%d", pool.Profile, role, i+1))
			} else {
				labels = append(labels, fmt.Sprintf("%s-%d", pool.Profile, i+1))
			}
		}
	}
	return cfgs, labels
}

// startStack starts the fleet, then the gateway, and waits until the gateway serves the model.
func startStack(ctx context.Context, cfg *Config, sc Scenario, w *workload.Workload, policy string) (*stack, error) {
	sc = sc.forPolicy(policy)
	cfgs, labels := fleetConfigs(sc, w, cfg.TimeScale)
	cfg.podSettings(cfgs)
	var kvPort string
	if sc.KVEvents {
		var err error
		if kvPort, err = harness.FreePort(); err != nil {
			return nil, err
		}
		kvEvents(sc, cfgs, "tcp://"+kvPort)
	}
	f, err := fleet.New(cfgs, cfg.Logger.With("policy", policy))
	if err != nil {
		return nil, err
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	st := &stack{policy: policy, fleet: f, labels: labels, stop: cancel, done: make(chan error, 1), kvEvents: kvPort}
	for _, c := range cfgs {
		role := c.Role
		if role == server.RoleBoth {
			role = ""
		}
		st.gpus, st.roles = append(st.gpus, c.Profile), append(st.roles, role)
	}
	go func() { st.done <- f.Run(fctx) }()
	if err := f.Ready(ctx); err != nil {
		st.close()
		return nil, err
	}
	if err := st.startGateway(ctx, cfg, sc); err != nil {
		st.close()
		return nil, err
	}
	return st, nil
}

func (st *stack) startGateway(ctx context.Context, cfg *Config, sc Scenario) error {
	endpoints := filepath.Join(cfg.LogDir, fmt.Sprintf("%s-%s-endpoints.yaml", sc.Name, st.policy))
	if err := os.WriteFile(
		endpoints,
		endpointsFile(st.fleet.Addrs(), st.gpus, cfg.weights, st.roles...),
		0o644,
	); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if r, ok := sc.Replicas[st.policy]; ok {
		return st.startReplicas(ctx, cfg, sc, r, endpoints)
	}
	scheduling := cfg.schedulingFlag(st.policy)
	if _, own := cfg.PolicyConfigs[st.policy]; !own {
		if path, err := scenarioConfig(sc, st.policy, cfg.LogDir); err != nil {
			return err
		} else if path != "" {
			scheduling = "--config=" + path
		}
	}
	g, listen, metrics, err := st.runGateway(ctx, cfg, sc, "", endpoints, scheduling)
	if err != nil {
		return err
	}
	st.gateway, st.url, st.metrics = g, "http://"+listen, metrics
	st.metricsAddrs = []string{metrics}
	return waitModel(ctx, st.url, 30*time.Second)
}

// runGateway starts one gateway process (suffix tells replicas apart in names and logs) in front
// of the fleet's endpoints file, with scheduling and extra flags, and waits until it is healthy;
// it returns the process and its HTTP and metrics addresses.
func (st *stack) runGateway(
	ctx context.Context,
	cfg *Config,
	sc Scenario,
	suffix, endpoints, scheduling string,
	extra ...string,
) (*harness.Process, string, string, error) {
	listen, err := harness.FreePort()
	if err != nil {
		return nil, "", "", err
	}
	metrics, err := harness.FreePort()
	if err != nil {
		return nil, "", "", err
	}
	scale := func(d time.Duration) string { return time.Duration(float64(d) * cfg.TimeScale).String() }
	g := &harness.Process{
		Name: "cluster-gateway/" + st.policy + suffix,
		Bin:  cfg.GatewayBin,
		Args: append([]string{
			"--cluster=bench-" + st.policy, "--region=local",
			"--listen=" + listen, "--metrics-listen=" + metrics, "--ext-proc-listen=", "--grpc-health-port=0",
			"--endpoints-file=" + endpoints,
			// The pod shares are attributed by address (x-switchyard-endpoint): the
			// simulated pods are known here by the addresses they listen on.
			"--endpoint-header-address",
			scheduling,
			"--scrape-interval=" + scale(cfg.ScrapeInterval),
			"--staleness=" + scale(2*time.Second),
			"--log-level=" + cfg.logLevel(),
		}, extra...),
		Health:  "http://" + metrics + "/readyz",
		LogPath: filepath.Join(cfg.LogDir, fmt.Sprintf("%s-%s%s-gateway.log", sc.Name, st.policy, suffix)),
	}
	if st.kvEvents != "" {
		g.Args = append(g.Args, "--kv-events-endpoint=tcp://"+st.kvEvents)
	}
	if err := g.Start(); err != nil {
		return nil, "", "", err
	}
	st.extra = append(st.extra, g) // stopped by close
	if err := g.WaitHealthy(ctx, 30*time.Second); err != nil {
		return nil, "", "", err
	}
	return g, listen, metrics, nil
}

// schedulingFlag is the gateway flag that selects policy: --config=FILE for a policy with an
// EndpointPickerConfig file in PolicyConfigs, else the built-in --profile=POLICY.
func (c *Config) schedulingFlag(policy string) string {
	if f, ok := c.PolicyConfigs[policy]; ok {
		return "--config=" + f
	}
	return "--profile=" + policy
}

// WeightLabel is the pod label the gateway's weighted baselines read a pod's weight from
// (cluster-gateway's framework.DefaultWeightLabel).
const WeightLabel = "switchyard.dev/weight"

// endpointsFile renders the gateway's --endpoints-file: every pod by address, in fleet order,
// labelled with its GPU profile's weight when weights has it, with its role when roles names one.
func endpointsFile(addrs, gpus []string, weights map[string]float64, roles ...string) []byte {
	var b strings.Builder
	for i, addr := range addrs {
		fmt.Fprintf(&b, "- address: %q\n", addr)
		if i < len(roles) && roles[i] != "" {
			fmt.Fprintf(&b, "  role: %s\n", roles[i])
		}
		if w, ok := weights[gpus[i]]; ok && w > 0 {
			fmt.Fprintf(&b, "  labels: {%s: %q}\n", WeightLabel, strconv.FormatFloat(w, 'g', 6, 64))
		}
	}
	if len(addrs) == 0 {
		b.WriteString("[]\n")
	}
	return []byte(b.String())
}

// waitModel polls the gateway's /v1/models until it lists a model (the pods' /v1/models have
// been read), so that no policy starts the run answering 404.
func waitModel(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	err := poll.Wait(ctx, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/models", nil)
		if err != nil {
			return poll.Stop(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var body struct {
			Data []json.RawMessage `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return fmt.Errorf("decode /v1/models: %w", err)
		}
		if resp.StatusCode != http.StatusOK || len(body.Data) == 0 {
			return fmt.Errorf("/v1/models: status %d, %d models", resp.StatusCode, len(body.Data))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bench: gateway %s lists no model after %v: %w", url, timeout, err)
	}
	return nil
}

// close stops the gateway, then the fleet.
func (st *stack) close() error {
	var errs []error
	if st.front != nil {
		st.front.close()
	}
	for _, g := range st.extra {
		if err := g.Stop(15 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	st.stop()
	select {
	case err := <-st.done:
		if err != nil {
			errs = append(errs, fmt.Errorf("fleet %s: %w", st.policy, err))
		}
	case <-time.After(40 * time.Second):
		errs = append(errs, fmt.Errorf("fleet %s did not stop", st.policy))
	}
	if len(errs) > 0 {
		return fmt.Errorf("bench: stop %s: %v", st.policy, errs)
	}
	return nil
}

// podStats reads every pod's engine counters.
func (st *stack) podStats(share map[string]float64, maxKV []float64) PolicyStats {
	ps := PolicyStats{Policy: st.policy}
	addrs := st.fleet.Addrs()
	for i, s := range st.fleet.Servers() {
		snap := s.Snapshot()
		var finished uint64
		for _, n := range snap.Stats.Finished {
			finished += n
		}
		pod := PodStats{
			Pod: st.labels[i], Addr: addrs[i], Share: share[addrs[i]], Finished: finished,
			AdapterLoads: snap.Stats.AdapterLoads, PrefixQueries: snap.Stats.PrefixQueries,
			PrefixHits: snap.Stats.PrefixHits, Preemptions: snap.Stats.Preemptions,
			StepLagP99Ms: 1000 * snap.Stats.Lag.Quantile(0.99),
		}
		if i < len(maxKV) {
			pod.MaxKV = maxKV[i]
		}
		ps.Pods = append(ps.Pods, pod)
		ps.AdapterLoads += pod.AdapterLoads
		ps.Preemptions += pod.Preemptions
		ps.prefixQueries += pod.PrefixQueries
		ps.prefixHits += pod.PrefixHits
		ps.MaxKV = max(ps.MaxKV, pod.MaxKV)
	}
	ps.Decisions = st.decisions()
	if ps.prefixQueries > 0 {
		ps.EnginePrefixHitRate = float64(ps.prefixHits) / float64(ps.prefixQueries)
	}
	return ps
}

// decisions reads the gateway's scheduling outcomes (switchyard_gateway_scheduling_decisions_total
// by outcome: ok, saturated, ...), flow-control outcomes (switchyard_gateway_flow_outcomes_total,
// keyed "flow_" + outcome), under a pd profile its prefill/decode decisions
// (switchyard_gateway_pd_decisions_total, keyed "pd_" + decision), and how the
// precise-prefix-cache-scorer scored requests (switchyard_gateway_precise_prefix_decisions_total,
// keyed by preciseDecision); nil when the gateway exports none of them.
func (st *stack) decisions() map[string]float64 {
	out := map[string]float64{}
	for _, addr := range st.metricsAddrs {
		st.addDecisions(addr, out)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// addDecisions adds the outcomes on the gateway metrics page at addr to out.
func (st *stack) addDecisions(addr string, out map[string]float64) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	families := map[string][2]string{ // family: key prefix, label
		"switchyard_gateway_scheduling_decisions_total{": {"", "outcome"},
		"switchyard_gateway_flow_outcomes_total{":        {"flow_", "outcome"},
		"switchyard_gateway_pd_decisions_total{":         {"pd_", "decision"},
	}
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, preciseFamily); ok {
			if key, v, ok := preciseDecision(rest); ok {
				out[key] += v
			}
			continue
		}
		for family, f := range families {
			if rest, ok := strings.CutPrefix(line, family); ok {
				if outcome, v, ok := labelValue(rest, f[1]); ok {
					out[f[0]+outcome] += v
				}
			}
		}
	}
}

// preciseFamily counts how the precise-prefix-cache-scorer scored requests, by mode and reason.
const preciseFamily = "switchyard_gateway_precise_prefix_decisions_total{"

// preciseDecision parses `mode="approximate",reason="x"} 12` into the key "prefix_approximate_x"
// (a fallback and its reason), or `mode="precise",...} 12` into "prefix_precise".
func preciseDecision(rest string) (string, float64, bool) {
	labels, value, ok := strings.Cut(rest, "} ")
	mode, reason := labelOf(labels, "mode"), labelOf(labels, "reason")
	v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if !ok || err != nil || mode == "" {
		return "", 0, false
	}
	if mode == "precise" {
		return "prefix_precise", v, true
	}
	return "prefix_" + mode + "_" + reason, v, true
}

// labelOf returns label name's value in a Prometheus label list (`a="x",b="y"`), or "".
func labelOf(labels, name string) string {
	for _, l := range strings.Split(labels, ",") {
		if v, ok := strings.CutPrefix(l, name+`="`); ok {
			return strings.TrimSuffix(v, `"`)
		}
	}
	return ""
}

// labelValue parses `label="x"} 12` (other labels allowed before it).
func labelValue(rest, label string) (string, float64, bool) {
	labels, value, ok := strings.Cut(rest, "} ")
	_, outcome, found := strings.Cut(labels, label+`="`)
	outcome, _, _ = strings.Cut(outcome, `"`)
	v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	return outcome, v, ok && found && err == nil
}
