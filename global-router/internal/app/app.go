package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"

	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/memlimit"
	"github.com/switchyard-dev/switchyard/contract/openai"
	"github.com/switchyard-dev/switchyard/contract/ratelimit"

	"github.com/switchyard-dev/switchyard/global-router/internal/admin"
	"github.com/switchyard-dev/switchyard/global-router/internal/capmap"
	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd"
	"github.com/switchyard-dev/switchyard/global-router/internal/etcdclient"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
	"github.com/switchyard-dev/switchyard/global-router/internal/identity"
	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
	"github.com/switchyard-dev/switchyard/gossip"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// tracingFlushTimeout bounds the flush of the spans still queued at shutdown.
const tracingFlushTimeout = 5 * time.Second

// Version is the router's version, carried in gossip metadata.
var Version = "dev"

// Router is a wired global router.
type Router struct {
	cfg    Config
	log    *slog.Logger
	reg    *prometheus.Registry
	etcd   *embedetcd.Server // nil with external etcd
	client *clientv3.Client
	store  *configstore.Store
	node   *gossip.Node
	// wan and agg are the aggregator's node in the pool of aggregators and its digest publisher
	// (nil unless --gossip-aggregator).
	wan *gossip.Node
	agg *gossip.Aggregator
	// clusters is the cluster table's source: the region pool's summaries and the clusters of
	// other regions' digests.
	clusters *clustertable.Regional
	ident    *identity.Verifier
	table    *clustertable.Table
	fwd      *forward.Forwarder
	front    *frontdoor.Server
	limits   *ratelimit.Limiter
	admin    *admin.Server
	// capmap is the capacity map (nil with --capacity-map=false); outcomes records the front
	// door's outcomes for it.
	capmap   *capmap.Server
	outcomes *capmap.Recorder
	// listenTLS and adminTLS serve the OpenAI port and the admin API over TLS; nil: plain
	// HTTP/1.1 and h2c.
	listenTLS, adminTLS *tls.Config
	tokens              []string
	extra               []component  // optional: DNS responder, Route 53 sync
	bodies              *body.Budget // the OpenAI port's in-flight body budget
	tracing             *telemetry.Provider
}

// Run builds the router from cfg and runs it until ctx ends, then shuts down cleanly: in-flight
// streams finish (bounded), gossip leaves the pool, etcd stops.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	r, err := build(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer r.close()
	return r.run(ctx)
}

func build(ctx context.Context, cfg Config, log *slog.Logger) (*Router, error) {
	r := &Router{cfg: cfg, log: log, reg: prometheus.NewRegistry()}
	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	steps := []func(context.Context) error{
		r.buildTracing,
		r.buildEtcd,
		r.buildStore,
		r.buildGossip,
		r.buildAggregator,
		r.buildData,
		r.buildToken,
		r.buildAdmin,
		r.buildCapacityMap,
		r.buildTLS,
		r.buildDNS,
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			r.close()
			return nil, err
		}
	}
	return r, nil
}

// buildTracing sets up the OpenTelemetry tracer provider (disabled without an OTLP endpoint).
// The OTEL_* variables are the process's: the OTLP exporters read them from it too.
func (r *Router) buildTracing(ctx context.Context) error {
	tp, err := telemetry.New(ctx, r.cfg.tracingConfig(), os.Getenv, r.log.With("component", "tracing"), r.reg)
	if err != nil {
		return err
	}
	r.tracing = tp
	return nil
}

func (r *Router) buildEtcd(ctx context.Context) error {
	var endpoints []string
	if len(r.cfg.EtcdEndpoints) == 0 {
		ecfg := embedetcd.DefaultConfig(filepath.Join(r.cfg.DataDir, "etcd"))
		ecfg.ClientURL = r.cfg.embeddedEtcdURL()
		ecfg.ClientCertFile, ecfg.ClientKeyFile = r.cfg.EmbeddedEtcdCertFile, r.cfg.EmbeddedEtcdKeyFile
		ecfg.ClientCAFile = r.cfg.EmbeddedEtcdClientCAFile
		srv, err := embedetcd.Start(ctx, ecfg, r.log)
		if err != nil {
			return fmt.Errorf("embedded etcd: %w", err)
		}
		r.etcd, endpoints = srv, srv.Endpoints()
		r.log.Info(
			"embedded etcd started",
			"endpoints",
			endpoints,
			"data_dir",
			ecfg.DataDir,
			"tls",
			ecfg.ClientCertFile != "",
		)
	}
	cli, err := etcdclient.New(r.cfg.etcdClient(endpoints), r.log.With("component", "etcd-client"))
	if err != nil {
		return err
	}
	r.client = cli
	return nil
}

func (r *Router) buildStore(context.Context) error {
	s, err := configstore.New(r.client, r.log.With("component", "configstore"), r.reg)
	if err != nil {
		return err
	}
	r.store = s
	return nil
}

func (r *Router) buildGossip(context.Context) error {
	keys, err := gossip.LoadKeyFile(r.cfg.GossipKeyFile)
	if err != nil {
		return fmt.Errorf("--gossip-key-file: %w", err)
	}
	gc := gossip.DefaultWANConfig()
	if r.cfg.GossipProfile == "lan" {
		gc = gossip.DefaultLANConfig()
	}
	gc.NodeName = r.nodeName()
	gc.Role, gc.Region, gc.Version = gossip.RoleRouter, r.cfg.Region, Version
	if gc.BindAddr, gc.BindPort, err = gossip.ParseAddr(r.cfg.GossipBind); err != nil {
		return fmt.Errorf("--gossip-bind: %w", err)
	}
	if r.cfg.GossipAdvertise != "" {
		if gc.AdvertiseAddr, gc.AdvertisePort, err = gossip.ParseAddr(r.cfg.GossipAdvertise); err != nil {
			return fmt.Errorf("--gossip-advertise: %w", err)
		}
	}
	gc.Seeds, gc.Keys = r.cfg.GossipJoin, keys
	gc.Logger, gc.Registerer = r.log.With("component", "gossip"), r.reg
	ic := identity.DefaultConfig()
	ic.Require, ic.AllowCleartext = r.cfg.RequireClusterIdentity, r.cfg.AllowCleartextGateways
	if r.ident, err = identity.New(ic, r.store, r.log.With("component", "identity"), r.reg); err != nil {
		return err
	}
	gc.Verifier, gc.DigestVerifier, gc.MaxClockSkew = r.ident, r.ident, r.cfg.MaxClockSkew
	if r.node, err = gossip.New(gc); err != nil {
		return err
	}
	r.clusters = clustertable.NewRegional(r.cfg.Region, r.node, r.node, r.ident, gc.DigestTTL,
		func() int64 { return r.store.Snapshot().RegistrationsRevision() })
	return nil
}

// buildAggregator joins the pool of aggregators (--gossip-aggregator): a second gossip node with
// WAN timings whose signing key is the region key, and the aggregator that publishes the
// region's digest there and relays the other regions' into the region's pool.
func (r *Router) buildAggregator(context.Context) error {
	if !r.cfg.GossipAggregator {
		return nil
	}
	keyFile := r.cfg.GossipWANKeyFile
	if keyFile == "" {
		keyFile = r.cfg.GossipKeyFile
	}
	keys, err := gossip.LoadKeyFile(keyFile)
	if err != nil {
		return fmt.Errorf("--gossip-wan-key-file: %w", err)
	}
	gc := gossip.DefaultWANConfig()
	gc.NodeName, gc.Role, gc.Region, gc.Version = r.nodeName(), gossip.RoleRouter, r.cfg.Region, Version
	if gc.BindAddr, gc.BindPort, err = gossip.ParseAddr(r.cfg.GossipWANBind); err != nil {
		return fmt.Errorf("--gossip-wan-bind: %w", err)
	}
	if r.cfg.GossipWANAdvertise != "" {
		if gc.AdvertiseAddr, gc.AdvertisePort, err = gossip.ParseAddr(r.cfg.GossipWANAdvertise); err != nil {
			return fmt.Errorf("--gossip-wan-advertise: %w", err)
		}
	}
	if r.cfg.RegionSigningKeyFile != "" {
		if gc.SigningKey, err = gossip.LoadSigningKeyFile(r.cfg.RegionSigningKeyFile); err != nil {
			return fmt.Errorf("--region-signing-key-file: %w", err)
		}
	}
	gc.Seeds, gc.Keys, gc.MetricsSubsystem = r.cfg.GossipWANJoin, keys, "gossip_wan"
	gc.Logger, gc.Registerer = r.log.With("component", "gossip-wan"), r.reg
	gc.Verifier, gc.DigestVerifier, gc.MaxClockSkew = r.ident, r.ident, r.cfg.MaxClockSkew
	if r.wan, err = gossip.New(gc); err != nil {
		return fmt.Errorf("pool of aggregators: %w", err)
	}
	ac := gossip.DefaultAggregatorConfig()
	ac.Region, ac.Regional, ac.Aggregators = r.cfg.Region, r.node, r.wan
	ac.Logger, ac.Registerer = r.log.With("component", "aggregator"), r.reg
	r.agg, err = gossip.NewAggregator(ac)
	return err
}

func (r *Router) nodeName() string {
	if r.cfg.NodeName != "" {
		return r.cfg.NodeName
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("router-%s-%s-%d", r.cfg.Region, host, os.Getpid())
}

func (r *Router) buildData(context.Context) error {
	ej := clustertable.DefaultEjectionConfig()
	ej.MaxEjectionPercent = r.cfg.MaxEjectionPercent
	r.table = clustertable.New(clustertable.Config{Region: r.cfg.Region, RTT: r.cfg.SimulatedRTT, Ejection: ej,
		Logger: r.log.With("component", "clustertable"), Registerer: r.reg}, r.clusters.Source(), drainView{r.store})
	fc := forward.DefaultConfig()
	fc.MaxAttempts = r.cfg.MaxAttempts
	tc, err := r.cfg.gatewayTLS()
	if err != nil {
		return err
	}
	fc.TLS, fc.Tracer = tc, r.tracing.Tracer()
	fwd, err := forward.New(fc, forward.Observers{r.table, forward.NewMetrics(r.reg)})
	if err != nil {
		return err
	}
	r.fwd = fwd
	dc := frontdoor.DefaultConfig()
	dc.Region, dc.MaxBodyBytes, dc.QueueWait = r.cfg.Region, r.cfg.MaxBodyBytes, r.cfg.QueueWait
	dc.Bodies = body.NewBudget(memlimit.BodyBudget(r.cfg.MaxInflightBodyBytes, r.cfg.MaxBodyBytes))
	if err := frontdoor.RegisterBodyBudget(r.reg, dc.Bodies); err != nil {
		return err
	}
	r.bodies = dc.Bodies
	dc.Options.LocalOnly = r.cfg.RoutingMode == RoutingLocalOnly
	dc.Options.Spillover = r.cfg.RoutingMode == RoutingSpillover
	dc.PolicyUnavailable = r.cfg.PolicyUnavailable
	dc.SessionHeader = r.cfg.SessionHeader
	dc.Passthrough, _ = openai.ParsePassthroughPaths(r.cfg.PassthroughPaths) // validated
	dc.Tracer = r.tracing.Tracer()
	if len(r.cfg.SimulatedRTT) > 0 {
		dc.Delay = func(region string) time.Duration { return r.cfg.SimulatedRTT[region] }
	}
	lc := ratelimit.DefaultConfig()
	lc.Window = r.cfg.TenantTokenWindow
	lc.Share = (&regionShare{region: r.cfg.Region, nodes: r.node}).Share
	r.limits = ratelimit.New(lc)
	if err := registerLimiter(r.reg, r.limits); err != nil {
		return err
	}
	dc.Tenants, dc.Limiter = tenantView{r.store}, r.limits
	if r.cfg.CapacityMap {
		r.outcomes = capmap.NewRecorder(capmap.DefaultDecisions)
		dc.Outcomes = r.outcomes
	}
	r.front = frontdoor.New(
		dc,
		r.table,
		policyView{r.store},
		fwd,
		r.log.With("component", "frontdoor"),
		frontdoor.NewMetrics(r.reg),
	)
	return nil
}

func (r *Router) buildToken(context.Context) error {
	tokens, path, err := adminToken(r.cfg)
	if err != nil {
		return err
	}
	r.tokens = tokens
	r.log.Info("admin API token", "file", path)
	return nil
}

func (r *Router) buildAdmin(context.Context) error {
	ac := admin.DefaultConfig()
	ac.Token, ac.Region, ac.AllowCleartextGateways = r.tokens[0], r.cfg.Region, r.cfg.AllowCleartextGateways
	srv, err := admin.New(ac, admin.Deps{
		Policies:      r.store,
		Drains:        r.store,
		Config:        r.store,
		Clusters:      r.table,
		Gossip:        r.node,
		Explainer:     r.front,
		Registrations: r.store,
		Regions:       r.store,
		Identity:      r.ident,
		Tenants:       r.store,
	},
		r.log.With("component", "admin"), r.reg)
	if err == nil {
		err = srv.SetTokens(r.tokens)
	}
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	r.admin = srv
	return nil
}

// buildCapacityMap builds the capacity map served on the admin port (--capacity-map).
func (r *Router) buildCapacityMap(context.Context) error {
	if !r.cfg.CapacityMap {
		return nil
	}
	mc := capmap.DefaultConfig()
	mc.Region, mc.MaxStreams = r.cfg.Region, r.cfg.CapacityMapMaxStreams
	m, err := capmap.New(mc, capmap.Deps{Clusters: r.admin, Regions: r.table, Tokens: r.admin, Outcomes: r.outcomes},
		r.log.With("component", "capmap"), r.reg)
	if err != nil {
		return fmt.Errorf("capacity map: %w", err)
	}
	r.capmap = m
	return nil
}

// adminHandler is the admin API and, with --capacity-map, the capacity map under /map/.
func (r *Router) adminHandler() http.Handler {
	if r.capmap == nil {
		return r.admin.Handler()
	}
	mux := http.NewServeMux()
	mux.Handle("/", r.admin.Handler())
	m := r.capmap.Handler()
	mux.Handle(capmap.Prefix, m)
	mux.Handle(strings.TrimSuffix(capmap.Prefix, "/"), m)
	return mux
}

// buildTLS loads the TLS configurations of the OpenAI and admin ports (the metrics port stays
// plain HTTP, for probes).
func (r *Router) buildTLS(context.Context) error {
	var err error
	if r.listenTLS, err = r.cfg.listenTLS(); err != nil {
		return err
	}
	r.adminTLS, err = r.cfg.adminTLS()
	return err
}

func (r *Router) buildDNS(ctx context.Context) error {
	cs, err := r.dnsComponents(ctx)
	r.extra = cs
	return err
}

// run starts every component and waits for the first to fail or for ctx to end.
func (r *Router) run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return r.store.Run(ctx) })
	g.Go(func() error { return r.node.Run(ctx) })
	g.Go(func() error { return gossip.KeyFileWatcher{Node: r.node, Path: r.cfg.GossipKeyFile}.Run(ctx) })
	g.Go(func() error { return r.tokenWatcher().Run(ctx) })
	g.Go(func() error {
		return identity.Watch{
			Config:   r.store,
			Verifier: r.ident,
			Node:     r.node,
			Logger:   r.log.With("component", "identity"),
		}.Run(
			ctx,
		)
	})
	g.Go(func() error {
		return tenantSync{store: r.store, limits: r.limits, log: r.log.With("component", "tenants")}.Run(ctx)
	})
	if r.etcd != nil {
		g.Go(func() error { return r.etcd.Run(ctx) })
	}
	if r.agg != nil {
		r.runAggregator(ctx, g)
	}
	for _, c := range r.extra {
		g.Go(func() error { return c.Run(ctx) })
	}
	g.Go(func() error { return serveTLS(ctx, r.cfg.Listen, r.mainHandler(), r.listenTLS, r.log) })
	g.Go(func() error { return serve(ctx, r.cfg.MetricsListen, r.metricsHandler(), r.log) })
	if r.capmap != nil {
		g.Go(func() error { return r.capmap.Run(ctx) })
	}
	g.Go(func() error { return serveTLS(ctx, r.cfg.AdminListen, r.adminHandler(), r.adminTLS, r.log) })
	r.log.Info("global router started", "region", r.cfg.Region, "listen", r.cfg.Listen, "listen_tls", r.listenTLS != nil,
		"admin", r.cfg.AdminListen, "admin_tls", r.adminTLS != nil, "metrics", r.cfg.MetricsListen,
		"max_body_bytes", r.cfg.MaxBodyBytes, "max_inflight_body_bytes", r.bodies.Limit())
	err := g.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// runAggregator runs the aggregator's node in the pool of aggregators, its key watchers and the
// aggregator itself.
func (r *Router) runAggregator(ctx context.Context, g *errgroup.Group) {
	keyFile := r.cfg.GossipWANKeyFile
	if keyFile == "" {
		keyFile = r.cfg.GossipKeyFile
	}
	g.Go(func() error { return r.wan.Run(ctx) })
	g.Go(func() error { return gossip.KeyFileWatcher{Node: r.wan, Path: keyFile}.Run(ctx) })
	if r.cfg.RegionSigningKeyFile != "" {
		g.Go(func() error {
			return gossip.SigningKeyFileWatcher{Node: r.wan, Path: r.cfg.RegionSigningKeyFile}.Run(ctx)
		})
	}
	g.Go(func() error {
		return identity.Watch{Config: r.store, Verifier: r.ident, Node: r.wan,
			Logger: r.log.With("component", "identity", "pool", "aggregators")}.Run(ctx)
	})
	g.Go(func() error {
		select { // the aggregator reads both pools: start it once both are up
		case <-ctx.Done():
			return nil
		case <-r.wan.Ready():
		}
		return r.agg.Run(ctx)
	})
	r.log.Info("region aggregator started", "region", r.cfg.Region, "wan_bind", r.cfg.GossipWANBind,
		"wan_join", r.cfg.GossipWANJoin, "region_key_id", r.wan.SigningKeyID())
}

func (r *Router) close() {
	if r.fwd != nil {
		r.fwd.Close()
	}
	// The front door has drained: flush its last spans.
	ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
	defer cancel()
	if err := r.tracing.Shutdown(ctx); err != nil {
		r.log.Warn("tracing flush failed", "err", err)
	}
	if r.client != nil {
		_ = r.client.Close()
	}
	if r.etcd != nil {
		r.etcd.Close()
	}
}

// ready reports whether the router can route somewhere: config loaded and a fresh cluster known.
func (r *Router) ready() (bool, string) {
	if !r.store.Snapshot().Loaded() {
		return false, "configuration not loaded from etcd"
	}
	for _, s := range r.clusters.Snapshot() {
		if !s.Stale {
			return true, "ok"
		}
	}
	return false, "no cluster with a fresh capacity summary"
}

// drainView reads drains from the newest config snapshot.
type drainView struct{ s *configstore.Store }

func (d drainView) Drained(cluster, region string) bool {
	return d.s.Snapshot().Drained(cluster, region)
}

// policyView reads policies from the newest config snapshot; it fails closed before the first
// load and for a policy that cannot be read.
type policyView struct{ s *configstore.Store }

func (p policyView) Policy(model string) (routing.Policy, error) { return p.s.Snapshot().Policy(model) }
