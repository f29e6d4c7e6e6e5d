// Package admintest runs a global router's admin API over real parts for tests: a gossip pool on
// loopback whose node 0 is the router and whose other nodes are gateways publishing capacity
// summaries, a config store in embedded etcd, the cluster table, the front door's routing
// decision, and the admin service on a loopback HTTP server speaking HTTP/1.1 and h2c.
package admintest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/contract/syncbuf"
	"github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1/adminv1connect"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin"
	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd/etcdtest"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
	"github.com/switchyard-dev/switchyard/global-router/internal/identity"
	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
)

// Fixed names of the test environment.
const (
	// Token is the admin bearer token.
	Token = "s3cret-admin-token"
	// Region is the router's region.
	Region = "us-east-1"
	// Model is the model every gateway serves at start.
	Model = "llama"
)

// Gateway is one gateway node of the pool.
type Gateway struct {
	// Node is the gateway's index in the pool.
	Node int
	// Cluster and Region are the gateway's cluster and region.
	Cluster, Region string
}

// Gateways are the pool's gateways: c1 in the router's region, c2 in another.
var Gateways = []Gateway{{1, "c1", "us-east-1"}, {2, "c2", "eu-west-1"}}

// Env is a running admin API. Its fields are for the test to drive the router's state.
type Env struct {
	Pool  *gossiptest.Pool
	Store *configstore.Store
	// Etcd is the store's etcd client (inside its namespace), for writes around the admin API.
	Etcd  *clientv3.Client
	Table *clustertable.Table
	Front *frontdoor.Server
	Reg   *prometheus.Registry
	// Admin is the admin service (SetTokens rotates its token).
	Admin *admin.Server
	// Handler is the admin API's handler, served by Server.
	Handler http.Handler
	Server  *httptest.Server
	// Client calls the API with the Connect protocol and the right token.
	Client adminv1connect.AdminServiceClient
	// Logs holds what the admin service logged (text format).
	Logs *syncbuf.Buffer
}

// Start runs an environment until the test ends. etcd is a running cluster to keep the config in
// (under a namespace of its own), or nil to start one for the test. Both gateways have published
// a summary serving Model by the time Start returns.
func Start(t testing.TB, etcd *etcdtest.Cluster) *Env {
	t.Helper()
	if etcd == nil {
		etcd = etcdtest.Start(t, 1)
	}
	e := &Env{Reg: prometheus.NewRegistry(), Logs: &syncbuf.Buffer{}}
	e.Pool = gossiptest.Start(t, 1+len(Gateways), configureNode)
	e.Store, e.Etcd = newStore(t, etcd)
	e.Table = clustertable.New(clustertable.Config{Region: Region}, e.Pool.Node(0), drainView{e.Store})
	fc := frontdoor.DefaultConfig()
	fc.Region = Region
	e.Front = frontdoor.New(fc, e.Table, policyView{e.Store}, nil, nil, nil)
	cfg := admin.DefaultConfig()
	cfg.Token, cfg.Region, cfg.WatchResync = Token, Region, 200*time.Millisecond
	ident, err := identity.New(identity.DefaultConfig(), e.Store, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := admin.New(cfg, admin.Deps{
		Policies: e.Store, Drains: e.Store, Config: e.Store,
		Clusters: e.Table, Gossip: e.Pool.Node(0), Explainer: e.Front,
		Registrations: e.Store, Regions: e.Store, Identity: ident, Tenants: e.Store,
	}, slog.New(slog.NewTextHandler(e.Logs, nil)), e.Reg)
	if err != nil {
		t.Fatal(err)
	}
	e.Admin, e.Handler = srv, srv.Handler()
	e.Server = Serve(t, e.Handler)
	e.Client = adminv1connect.NewAdminServiceClient(
		e.Server.Client(),
		e.Server.URL,
		connect.WithInterceptors(WithToken(Token)),
	)
	for _, g := range Gateways {
		e.Publish(t, g.Node, Capacity(Model, 4, 300_000))
	}
	return e
}

// configureNode makes node 0 the router and the others gateways. Summaries do not expire by age
// during a test: a stopped gateway goes stale by leaving the pool.
func configureNode(i int, c *gossip.Config) {
	c.Region, c.SummaryTTL = Region, time.Hour
	c.Timings = gossiptest.RelaxedTimings()
	if i == 0 {
		c.NodeName, c.Role, c.Cluster, c.AdvertiseURL = "router-0", gossip.RoleRouter, "", ""
		return
	}
	g := Gateways[i-1]
	c.NodeName = "gw-" + g.Cluster
	c.Cluster, c.Region, c.AdvertiseURL = g.Cluster, g.Region, fmt.Sprintf("http://%s.test:8080", g.Cluster)
}

// Publish makes pool node i publish a summary of models and waits until the router has it.
func (e *Env) Publish(t testing.TB, i int, models ...*gossipv1.ModelCapacity) {
	t.Helper()
	sent, err := e.Pool.Node(i).Publish(&gossipv1.CapacitySummary{Models: models})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, WaitTimeout, func() bool {
		for _, s := range e.Pool.Node(0).Snapshot() {
			if s.Node == sent.GetNode() && s.Summary.GetSequence() >= sent.GetSequence() {
				return true
			}
		}
		return false
	}, "summary reaches the router")
}

// Capacity returns a model's capacity figures: 400,000 KV tokens of which freeKV are free, queue
// 3, running 5, saturation 0.25, predicted TTFT 120 ms (160 ms on average over the pods).
func Capacity(name string, pods uint32, freeKV uint64, adapters ...string) *gossipv1.ModelCapacity {
	m := &gossipv1.ModelCapacity{
		Name: name, ReadyPods: pods, TotalKvTokens: 400_000, FreeKvTokens: freeKV, QueueDepth: 3, Running: 5,
		Saturation: 0.25, PredictedTtftMs: 120, MeanPredictedTtftMs: 160, PrefillTokensPerSecond: 10_000 * float32(pods),
	}
	for _, a := range adapters {
		m.Adapters = append(m.Adapters, &gossipv1.AdapterCapacity{Name: a, ResidentPods: 1})
	}
	return m
}

// newStore returns a running config store whose keys live in a namespace of their own, and its
// client.
func newStore(t testing.TB, etcd *etcdtest.Cluster) (*configstore.Store, *clientv3.Client) {
	t.Helper()
	cli := etcdtest.NamespacedClient(t, etcd.Endpoints(), etcdtest.UniqueNamespace("admintest"))
	s, err := configstore.New(cli, etcdtest.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("admintest: store Run = %v", err)
		}
	})
	poll.Until(t, WaitTimeout, func() bool { return s.Snapshot().Loaded() }, "config loaded")
	return s, cli
}

// Serve runs h on a loopback server that speaks HTTP/1.1 and h2c, as the router serves the admin
// API; the server's Client speaks h2c (so gRPC works through it too).
func Serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	srv.Client().Transport = tr
	t.Cleanup(tr.CloseIdleConnections)
	return srv
}

// WithToken returns a client interceptor that sends tok as the bearer token of every call (none
// when tok is empty).
func WithToken(tok string) connect.Interceptor { return tokenInterceptor(tok) }

type tokenInterceptor string

func (t tokenInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if t != "" {
			req.Header().Set("Authorization", "Bearer "+string(t))
		}
		return next(ctx, req)
	}
}

func (t tokenInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		if t != "" {
			conn.RequestHeader().Set("Authorization", "Bearer "+string(t))
		}
		return conn
	}
}

func (t tokenInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

type drainView struct{ s *configstore.Store }

func (d drainView) Drained(cluster, region string) bool {
	return d.s.Snapshot().Drained(cluster, region)
}

type policyView struct{ s *configstore.Store }

func (p policyView) Policy(model string) (routing.Policy, error) { return p.s.Snapshot().Policy(model) }

// WaitTimeout bounds every wait for a condition in the admin API's tests (poll.Until):
// generous, as a busy machine is slow.
const WaitTimeout = 20 * time.Second
