package proxy_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract/body"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/bbr"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/flowcontrol"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/proxy"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

var errSaturated = errors.New("saturated")

// orderScheduler returns the store's endpoints in a fixed address order (or saturation).
type orderScheduler struct {
	store     *datastore.Store
	mu        sync.Mutex
	order     []string
	saturated bool
	seen      []*framework.Request
	watch     *hashWatch
	// prefill, when set, is the address of a prefill/decode decision's prefill pod.
	prefill string
}

// setSaturated makes every endpoint saturated (or not) for the following Schedule calls.
func (s *orderScheduler) setSaturated(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saturated = v
}

func (o *orderScheduler) Schedule(_ context.Context, req *framework.Request) (*framework.Result, error) {
	o.watch.see("schedule", req)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, req)
	if o.saturated {
		return nil, errSaturated
	}
	res := &framework.Result{}
	for _, a := range o.order {
		if ep := o.store.Get(a); ep != nil {
			res.Targets = append(res.Targets, ep)
		}
	}
	if ep := o.store.Get(o.prefill); ep != nil {
		res.Prefill, res.Disaggregation = &framework.Result{Targets: []framework.Endpoint{ep}}, framework.PDSplit
	}
	return res, nil
}

// hooks records PreRequest and PostResponse calls.
type hooks struct {
	mu    sync.Mutex
	pre   int
	post  []framework.ResponseInfo
	watch *hashWatch
}

func (h *hooks) PreRequest(_ context.Context, req *framework.Request, _ *framework.Result) {
	h.watch.see("PreRequest", req)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pre++
}

func (h *hooks) PostResponse(_ context.Context, req *framework.Request, info *framework.ResponseInfo) {
	h.watch.see("PostResponse", req)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.post = append(h.post, *info)
}

func (h *hooks) FirstToken(_ context.Context, req *framework.Request, _ *framework.ResponseInfo) {
	h.watch.see("FirstToken", req)
}

// hashWatch checks that a request's prefix hashes, which the router pools, stay what the
// scheduler first saw at every later reader: scheduling again (retries, the flow-control
// queue) and the hooks. Hashes released too early come back poisoned (the tests' router
// overwrites released slices) or reused by another request. A nil *hashWatch checks nothing.
type hashWatch struct {
	mu    sync.Mutex
	first map[*framework.Request][]uint64
	reads int // later reads compared
	bad   []string
}

// see compares req's hashes at stage with the first ones seen.
func (w *hashWatch) see(stage string, req *framework.Request) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	want, ok := w.first[req]
	if !ok {
		w.first[req] = slices.Clone(req.PrefixHashes)
		return
	}
	w.reads++
	if !slices.Equal(req.PrefixHashes, want) {
		w.bad = append(
			w.bad,
			fmt.Sprintf("%s of request %s: %d hashes, want %d unchanged", stage, req.ID, len(req.PrefixHashes), len(want)),
		)
	}
}

// check fails t if a reader saw changed hashes; it returns how many later reads were compared.
func (w *hashWatch) check(t testing.TB) int {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.bad {
		t.Error("prefix hashes read after their release: " + b)
	}
	return w.reads
}

func (h *hooks) posts() []framework.ResponseInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]framework.ResponseInfo(nil), h.post...)
}

type env struct {
	watch *hashWatch // nil in benchmarks
	store *datastore.Store
	sched *orderScheduler
	hooks *hooks
	reg   *prometheus.Registry
	flow  *flowcontrol.Controller
	srv   *proxy.Server
	url   string
}

// newEnv starts a gateway on 127.0.0.1:0 in front of the given upstream addresses, each
// serving model "llama" (and adapter "lora-a").
func newEnv(t testing.TB, mutate func(*proxy.Config), upstreams ...string) *env {
	t.Helper()
	return newEnvFlow(t, false, mutate, upstreams...)
}

// newEnvFlow is newEnv with flow-control queueing on or off.
func newEnvFlow(t testing.TB, queueing bool, mutate func(*proxy.Config), upstreams ...string) *env {
	t.Helper()
	return newEnvWith(t, envOptions{queueing: queueing, mutate: mutate}, upstreams...)
}

// envOptions are newEnvWith's settings beyond the upstreams.
type envOptions struct {
	queueing bool
	mutate   func(*proxy.Config)
	// tls, when set, serves the gateway over TLS with it (e.url is then https://).
	tls *tls.Config
	// log receives the server's logs; nil discards them.
	log *slog.Logger
	// budget bounds the request bodies in flight; nil: none.
	budget *body.Budget
	// tracer records the pipeline's and the proxy's spans; nil: tracing off.
	tracer *telemetry.Tracer
	// maxBody is the body limit; 0: 64 KiB.
	maxBody int64
}

// newEnvWith is newEnv with o.
func newEnvWith(t testing.TB, o envOptions, upstreams ...string) *env {
	t.Helper()
	queueing, mutate := o.queueing, o.mutate
	e := &env{store: datastore.NewStore(nil, nil), hooks: &hooks{}, reg: prometheus.NewRegistry()}
	_, bench := t.(*testing.B) // benchmarks measure the real pool, unwatched
	if !bench {
		e.watch = &hashWatch{first: map[*framework.Request][]uint64{}}
		e.hooks.watch = e.watch
		t.Cleanup(func() { e.watch.check(t) })
	}
	var specs []datastore.EndpointSpec
	for _, a := range upstreams {
		specs = append(specs, datastore.EndpointSpec{Address: a})
	}
	e.store.Sync(specs)
	for _, ep := range e.store.Endpoints() {
		ep.SetModels(&datastore.Models{Base: "llama", Adapters: []string{"lora-a"}})
		ep.SetMetrics(&datastore.Metrics{ScrapedAt: time.Now().Add(time.Hour)})
	}
	e.sched = &orderScheduler{store: e.store, order: upstreams, watch: e.watch}
	bcfg := bbr.DefaultConfig()
	bcfg.MaxBodyBytes = 1 << 16
	if o.maxBody > 0 {
		bcfg.MaxBodyBytes = o.maxBody
	}
	router, err := bbr.NewRouter(bcfg, e.store)
	if err != nil {
		t.Fatal(err)
	}
	if !bench {
		router.PoisonReleasedHashes()
	}
	fcfg := flowcontrol.DefaultConfig()
	fcfg.Enabled = queueing
	fcfg.RetryInterval = time.Hour // only Notify retries, so tests see what triggers them
	flow, err := flowcontrol.New(
		fcfg,
		e.sched,
		flowcontrol.Options{IsSaturated: func(err error) bool { return errors.Is(err, errSaturated) }},
	)
	if err != nil {
		t.Fatal(err)
	}
	e.flow = flow
	m, err := pipeline.NewMetrics(e.reg)
	if err != nil {
		t.Fatal(err)
	}
	pipe, err := pipeline.New(pipeline.Options{Router: router, Flow: flow, Hooks: e.hooks, Classify: fcfg, Metrics: m,
		BodyBudget: o.budget, Logger: o.log, Tracer: o.tracer})
	if err != nil {
		t.Fatal(err)
	}
	cfg := proxy.DefaultConfig()
	cfg.Cluster, cfg.Region = "c1", "us-east-1"
	if mutate != nil {
		mutate(&cfg)
	}
	if e.srv, err = proxy.New(cfg, pipe, e.store, o.log, e.reg); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	scheme := "http://"
	if o.tls != nil {
		ln, scheme = tls.NewListener(ln, o.tls), "https://"
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- e.srv.Serve(ctx, ln) }()
	go func() { done <- flow.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	})
	e.url = scheme + ln.Addr().String()
	return e
}

func upstream(t testing.TB, h http.HandlerFunc) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func post(t testing.TB, url, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// waitTimeout bounds every wait for a condition in these tests (poll.Until): generous, as a
// busy machine is slow.
const waitTimeout = 10 * time.Second
