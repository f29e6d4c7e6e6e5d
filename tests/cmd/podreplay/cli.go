package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/switchyard-dev/switchyard/tests/bench"
	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/oracle"
	"github.com/switchyard-dev/switchyard/tests/modelsim/podreplay"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
)

// options are the command's flags.
type options struct {
	samples, scenario, target, cluster, endpoint, profile, client string
	timeScale                                                     float64
	hold                                                          int
	reaction                                                      time.Duration
	later, requests                                               bool
}

// errUsage marks bad flags (exit code 2).
var errUsage = errors.New("usage")

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("podreplay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.samples, "samples", "", "a benchmark run's NAME-samples.csv (required)")
	fs.StringVar(
		&o.scenario,
		"scenario",
		"region-burst",
		"the run's scenario: gives each cluster's profile and the round trips between regions",
	)
	fs.StringVar(
		&o.target,
		"target",
		"global",
		"the policy or routing mode whose pods to replay (the samples' target column)",
	)
	fs.StringVar(&o.cluster, "cluster", "", "replay only this cluster's pods")
	fs.StringVar(&o.endpoint, "endpoint", "", "replay only this pod (HOST:PORT, the samples' endpoint column)")
	fs.StringVar(
		&o.client,
		"client-region",
		"",
		"report only the requests of clients in this region (every request the pods served is still replayed)",
	)
	fs.StringVar(
		&o.profile,
		"profile",
		"",
		"the pods' modelsim profile (default: the scenario's, when the cluster has one)",
	)
	fs.Float64Var(&o.timeScale, "time-scale", 2, "the run's --time-scale: real time per simulated time")
	fs.IntVar(
		&o.hold,
		"hold-prefill-tokens",
		0,
		"also replay a gateway holding requests back while the pod's requests without a first token have more prompt tokens than this with the request's own (0: off)",
	)
	fs.DurationVar(
		&o.reaction,
		"hold-reaction",
		time.Millisecond,
		"how long (simulated) a held request takes to reach the pod once a first token has made room",
	)
	fs.BoolVar(
		&o.later,
		"later",
		true,
		"also replay each request without the requests that arrived after it (their delay on it)",
	)
	fs.BoolVar(&o.requests, "requests", false, "print every request, not only each pod's percentiles")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	case o.samples == "":
		return nil, fmt.Errorf("%w: --samples is required", errUsage)
	case o.timeScale <= 0:
		return nil, fmt.Errorf("%w: --time-scale must be positive, got %v", errUsage, o.timeScale)
	case o.hold < 0:
		return nil, fmt.Errorf("%w: --hold-prefill-tokens must not be negative, got %d", errUsage, o.hold)
	case o.reaction < 0:
		return nil, fmt.Errorf("%w: --hold-reaction must not be negative, got %v", errUsage, o.reaction)
	}
	return o, nil
}

// run performs one invocation and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil {
		err = replay(o, stdout)
	}
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "podreplay:", err)
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "podreplay:", err)
		return 1
	}
	return 0
}

// pod is one endpoint's answered requests.
type pod struct {
	endpoint, cluster string
	samples           []bench.Sample
	failed            int
}

func replay(o *options, stdout io.Writer) error {
	sc, err := bench.Lookup(o.scenario)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	f, err := os.Open(o.samples)
	if err != nil {
		return err
	}
	samples, err := bench.ReadSamples(f)
	f.Close()
	if err != nil {
		return err
	}
	pods, err := selectPods(o, samples)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	var all []row // every pod's reported requests
	for _, p := range pods {
		prof, err := podProfile(o, sc, p.cluster)
		if err != nil {
			return err
		}
		rows, err := replayPod(o, sc, prof, p)
		if err != nil {
			return fmt.Errorf("pod %s: %w", p.endpoint, err)
		}
		replayed := len(rows)
		if o.client != "" {
			rows = slices.DeleteFunc(rows, func(r row) bool { return r.client != o.client })
		}
		fmt.Fprintf(
			w,
			"pod %s (cluster %s, %s): %d requests replayed, %d failed ones left out; %d reported\n",
			p.endpoint,
			p.cluster,
			prof.Name,
			replayed,
			p.failed,
			len(rows),
		)
		if len(rows) == 0 {
			fmt.Fprintln(w)
			continue
		}
		printPercentiles(w, o, rows)
		if o.requests {
			fmt.Fprintln(w) // a line without cells: the requests' table aligns on its own
			printRequests(w, o, rows)
		}
		all = append(all, rows...)
		fmt.Fprintln(w)
	}
	if len(pods) > 1 && len(all) > 0 {
		fmt.Fprintf(w, "all %d pods: %d requests reported\n", len(pods), len(all))
		printPercentiles(w, o, all)
	}
	return w.Flush()
}

// selectPods groups the answered samples of o's target (and cluster or endpoint) by endpoint.
func selectPods(o *options, samples []bench.Sample) ([]*pod, error) {
	byEndpoint := map[string]*pod{}
	var order []string
	for _, s := range samples {
		if s.Target != o.target || (o.cluster != "" && s.Cluster != o.cluster) ||
			(o.endpoint != "" && s.Endpoint != o.endpoint) ||
			s.Endpoint == "" {
			continue
		}
		p := byEndpoint[s.Endpoint]
		if p == nil {
			p = &pod{endpoint: s.Endpoint, cluster: s.Cluster}
			byEndpoint[s.Endpoint] = p
			order = append(order, s.Endpoint)
		}
		if !s.OK || s.OutputTokens <= 0 {
			p.failed++
			continue
		}
		p.samples = append(p.samples, s)
	}
	if len(order) == 0 {
		return nil, fmt.Errorf(
			"%w: no request of target %q (cluster %q, endpoint %q) names a pod in %s",
			errUsage,
			o.target,
			o.cluster,
			o.endpoint,
			o.samples,
		)
	}
	slices.Sort(order)
	out := make([]*pod, len(order))
	for i, e := range order {
		out[i] = byEndpoint[e]
	}
	return out, nil
}

// podProfile is --profile, or the profile of the scenario's cluster when it has one.
func podProfile(o *options, sc bench.Scenario, cluster string) (profile.Profile, error) {
	name := o.profile
	if name == "" {
		for _, r := range sc.Regions {
			for _, c := range r.Clusters {
				if c.Name != cluster {
					continue
				}
				for _, p := range c.Pools {
					if name != "" && p.Profile != name {
						return profile.Profile{}, fmt.Errorf(
							"%w: cluster %s has pods of %s and %s: pass --profile",
							errUsage,
							cluster,
							name,
							p.Profile,
						)
					}
					name = p.Profile
				}
			}
		}
	}
	if name == "" {
		return profile.Profile{}, fmt.Errorf(
			"%w: scenario %s names no cluster %q: pass --profile",
			errUsage,
			sc.Name,
			cluster,
		)
	}
	p, err := profile.Lookup(name)
	if err != nil {
		return profile.Profile{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	return p, nil
}

// row is one request's figures, in real time as the client saw them.
type row struct {
	index                           int
	client                          string
	sent                            time.Duration
	prompt                          int
	measured, replayed, later, held time.Duration
}

// replayPod replays p's requests: each reaches the pod a round trip after it was sent when it
// was served outside its client's region (the router delays the request by the whole round
// trip), and its replayed TTFT, like the measured one, includes that round trip.
func replayPod(o *options, sc bench.Scenario, prof profile.Profile, p *pod) ([]row, error) {
	ts := o.timeScale
	sim := func(real time.Duration) time.Duration { return time.Duration(float64(real) / ts) }
	realTime := func(sim time.Duration) time.Duration { return time.Duration(float64(sim) * ts) }
	reqs := make([]podreplay.Request, len(p.samples))
	rtt := make([]time.Duration, len(p.samples))
	for i, s := range p.samples {
		d := sc.RTT(s.ClientRegion, s.ServedRegion)
		rtt[i] = d
		reqs[i] = podreplay.Request{
			ID:           i,
			Arrival:      sim(s.Sent) + d,
			PromptTokens: s.PromptTokens,
			OutputTokens: s.OutputTokens,
		}
	}
	ecfg := engine.DefaultConfig()
	ecfg.Profile = prof
	cfg := podreplay.Config{Engine: ecfg}
	res, err := podreplay.Replay(cfg, reqs)
	if err != nil {
		return nil, err
	}
	var later []time.Duration
	if o.later {
		if later, err = podreplay.LaterArrivalDelay(cfg, reqs); err != nil {
			return nil, err
		}
	}
	var held []podreplay.Result
	if o.hold > 0 {
		cfg.HoldPrefillTokens, cfg.HoldReaction = o.hold, o.reaction
		if held, err = podreplay.Replay(cfg, reqs); err != nil {
			return nil, err
		}
	}
	rows := make([]row, len(res))
	for i, r := range res {
		s := p.samples[r.ID]
		rows[i] = row{
			index:    s.Index,
			client:   s.ClientRegion,
			sent:     s.Sent,
			prompt:   s.PromptTokens,
			measured: s.TTFT,
			replayed: realTime(r.TTFT + rtt[r.ID]),
		}
		if later != nil {
			rows[i].later = realTime(later[i])
		}
		if held != nil {
			rows[i].held = realTime(held[i].TTFT + rtt[r.ID])
		}
	}
	return rows, nil
}

func printPercentiles(w io.Writer, o *options, rows []row) {
	fmt.Fprintln(w, "  TTFT, real ms\tP50\tP90\tP99\tmax\t")
	line := func(name string, get func(row) time.Duration) {
		ds := make([]time.Duration, len(rows))
		for i, r := range rows {
			ds[i] = get(r)
		}
		slices.Sort(ds)
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t\n", name, msOf(oracle.NearestRank(ds, 0.5)), msOf(oracle.NearestRank(ds, 0.9)),
			msOf(oracle.NearestRank(ds, 0.99)), msOf(oracle.NearestRank(ds, 1)))
	}
	line("measured", func(r row) time.Duration { return r.measured })
	line("replayed", func(r row) time.Duration { return r.replayed })
	if o.later {
		line("delay by later arrivals", func(r row) time.Duration { return r.later })
	}
	if o.hold > 0 {
		line(fmt.Sprintf("replayed, held above %d tokens", o.hold), func(r row) time.Duration { return r.held })
	}
}

func printRequests(w io.Writer, o *options, rows []row) {
	fmt.Fprint(w, "  request\tsent ms\tprompt\tmeasured\treplayed\t")
	if o.later {
		fmt.Fprint(w, "by later\t")
	}
	if o.hold > 0 {
		fmt.Fprint(w, "held\t")
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		fmt.Fprintf(w, "  %d\t%s\t%d\t%s\t%s\t", r.index, msOf(r.sent), r.prompt, msOf(r.measured), msOf(r.replayed))
		if o.later {
			fmt.Fprintf(w, "%s\t", msOf(r.later))
		}
		if o.hold > 0 {
			fmt.Fprintf(w, "%s\t", msOf(r.held))
		}
		fmt.Fprintln(w)
	}
}

func msOf(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond)) }
