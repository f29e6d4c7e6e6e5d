package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/switchyard-dev/switchyard/tests/harness"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// Replicas is a policy run as several gateway replicas of one cluster behind a round-robin
// front, as a Kubernetes Service spreads connections over a Deployment's pods.
type Replicas struct {
	// Profile is every replica's --profile.
	Profile string
	// Gateways is the number of replicas.
	Gateways int
	// Share joins the replicas in a replica pool (--replica-bind, --replica-join), so they share
	// their in-flight requests and prefix routes; without it each decides alone.
	Share bool
}

// The policies of the replicas scenario.
const (
	PolicySingle         = "single"
	PolicyReplicasShared = "replicas-shared"
	PolicyReplicasAlone  = "replicas-alone"
)

// replicasScenario measures what active-active replica sharing buys: the shipped default profile
// on one gateway, on three replicas behind round robin that share their state, and on the same
// three deciding alone, all on the same requests. It takes the precise-prefix scenario's shape,
// where prefix affinity decides the hit rate: 100 groups, each a 1,500-token system prompt and
// 300-token questions, on four A10G pods whose 120,000 tokens of KV cache cannot hold the
// groups' 150,000 tokens of prefixes, so a group whose requests are spread over several pods is
// evicted from each of them more often than one kept on its pod.
var replicasScenario = Scenario{
	Name: "replicas", Workload: "shared-prefix",
	Pools: []Pool{{"a10g", 4}},
	Shape: func(w *workload.Workload) {
		w.SharedPrefix.Groups, w.SharedPrefix.SystemTokens, w.SharedPrefix.QuestionTokens = 100, 1500, 300
	},
	Quick:    60 * time.Second, // fewer requests would rarely repeat a group
	Policies: []string{PolicySingle, PolicyReplicasShared, PolicyReplicasAlone},
	Baseline: PolicySingle,
	Replicas: map[string]Replicas{
		PolicySingle:         {Profile: Shipped, Gateways: 1},
		PolicyReplicasShared: {Profile: Shipped, Gateways: 3, Share: true},
		PolicyReplicasAlone:  {Profile: Shipped, Gateways: 3},
	},
	Target: "3 sharing replicas: P95 TTFT within 10% of one gateway's and prefix hit rate within 5 points",
	Check: func(f Figures) Verdict {
		one, shared, alone := f.TTFT(PolicySingle, 95), f.TTFT(PolicyReplicasShared, 95),
			f.TTFT(PolicyReplicasAlone, 95)
		h1, hs, ha := f.HitRate(PolicySingle), f.HitRate(PolicyReplicasShared), f.HitRate(PolicyReplicasAlone)
		return Verdict{
			shared <= 1.1*one && hs >= h1-0.05,
			fmt.Sprintf("P95: one %s, 3 sharing %s (%.2fx), 3 alone %s (%.2fx); hit rate: one %.1f%%, "+
				"sharing %.1f%%, alone %.1f%%", ms(one), ms(shared), shared/one, ms(alone), alone/one,
				100*h1, 100*hs, 100*ha),
		}
	},
}

// startReplicas starts r's gateways in front of the fleet (endpoints) and a round-robin front
// over them, which becomes the stack's URL.
func (st *stack) startReplicas(ctx context.Context, cfg *Config, sc Scenario, r Replicas, endpoints string) error {
	if r.Gateways < 1 {
		return errors.New("bench: replicas: at least one gateway")
	}
	var urls []string
	seed := ""
	for i := range r.Gateways {
		var extra []string
		if r.Share {
			bind, err := harness.FreePort()
			if err != nil {
				return err
			}
			extra = append(extra, "--replica-bind="+bind)
			if seed != "" {
				extra = append(extra, "--replica-join="+seed)
			} else {
				seed = bind
			}
		}
		g, listen, metrics, err := st.runGateway(ctx, cfg, sc, fmt.Sprintf("-%d", i+1), endpoints,
			"--profile="+r.Profile, extra...)
		if err != nil {
			return err
		}
		if i == 0 {
			st.gateway, st.metrics = g, metrics
		}
		st.metricsAddrs = append(st.metricsAddrs, metrics)
		urls = append(urls, "http://"+listen)
		if err := waitModel(ctx, "http://"+listen, 30*time.Second); err != nil {
			return err
		}
	}
	front, err := newRoundRobinFront(urls, cfg.Logger)
	if err != nil {
		return err
	}
	st.front, st.url = front, front.url
	return nil
}

// roundRobinFront is an HTTP reverse proxy that sends each request to the next of its backends
// in turn, streaming responses unbuffered.
type roundRobinFront struct {
	srv *http.Server
	url string
}

func newRoundRobinFront(backends []string, logger *slog.Logger) (*roundRobinFront, error) {
	targets := make([]*url.URL, len(backends))
	for i, b := range backends {
		u, err := url.Parse(b)
		if err != nil {
			return nil, fmt.Errorf("bench: front: %w", err)
		}
		targets[i] = u
	}
	var next atomic.Uint64
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(targets[(next.Add(1)-1)%uint64(len(targets))])
		},
		FlushInterval: -1, // SSE token by token
		ErrorLog:      slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		Transport:     &http.Transport{MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: front: %w", err)
	}
	f := &roundRobinFront{srv: &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second},
		url: "http://" + ln.Addr().String()}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

func (f *roundRobinFront) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = f.srv.Shutdown(ctx)
}
