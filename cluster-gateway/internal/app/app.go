package app

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	"golang.org/x/sync/errgroup"

	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/memlimit"
	"github.com/switchyard-dev/switchyard/contract/openai"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/autoscale"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/bbr"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/discovery"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/extproc"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/flowcontrol"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/kvevents"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/proxy"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/publish"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/replica"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scheduling"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scrape"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/tenantlimits"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// Run is the binary: it parses args and the environment, builds the gateway and runs it until ctx
// ends (SIGTERM), draining in-flight streams. --help prints usage and returns nil.
func Run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, sources, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	logger := NewLogger(cfg, stderr)
	if inert := givenInert(sources); len(inert) > 0 {
		logger.Info("accepted for GIE compatibility, no effect", "flags", inert)
	}
	limit, source, err := memlimit.Apply(cfg.MemoryLimit, getenv)
	if err != nil {
		return err
	}
	logger.Info("memory limit", memlimit.LogAttrs(limit, source)...)
	g, err := New(cfg, logger)
	if err != nil {
		return err
	}
	logger.Info(
		"cluster-gateway started",
		"cluster",
		cfg.Cluster,
		"region",
		cfg.Region,
		"listen",
		g.HTTPAddr(),
		"ext_proc",
		g.ExtProcAddr(),
		"kv_events",
		g.KVEventsAddr(),
		"metrics",
		g.MetricsAddr(),
		"grpc_health",
		g.HealthAddr(),
		"profile",
		g.sched.Profile(),
		"max_body_bytes",
		cfg.MaxBodyBytes,
		"max_inflight_body_bytes",
		g.bodies.Limit(),
	)
	err = g.Run(ctx)
	logger.Info("cluster-gateway stopped")
	return err
}

// Compile-time checks that the packages fit the consumer-side interfaces they are wired into.
var (
	_ flowcontrol.Scheduler = (*scheduling.Scheduler)(nil)
	_ pipeline.Hooks        = (*scheduling.Scheduler)(nil)
	_ pipeline.Admitter     = (*flowcontrol.Controller)(nil)
	_ proxy.Store           = (*datastore.Store)(nil)
	_ extproc.Endpoints     = (*datastore.Store)(nil)
	_ bbr.EndpointSource    = (*datastore.Store)(nil)
)

// component is anything the gateway runs until ctx ends.
type component interface {
	Run(ctx context.Context) error
}

// Gateway is an assembled cluster-gateway with its listeners open.
type Gateway struct {
	cfg        Config
	log        *slog.Logger
	reg        *prometheus.Registry
	store      *datastore.Store
	sched      *scheduling.Scheduler
	flow       *flowcontrol.Controller
	recent     *publish.RecentPrefixes // prompt prefixes routed recently, for the gossip summary
	capacity   autoscale.Source        // the cluster's capacity figures (the gossip publisher's)
	components []component
	httpLn     net.Listener
	extLn      net.Listener
	metricsLn  net.Listener
	healthLn   net.Listener // the gRPC health port (--grpc-health-port), nil when off
	httpSrv    *proxy.Server
	extSrv     *extproc.Server
	health     *extproc.Health
	bodies     *body.Budget // the in-flight body budget of both front doors
	tracing    *telemetry.Provider
	kvIndex    *kvevents.Index      // the pods' KV cache blocks, nil without --kv-events-endpoint
	kvSub      *kvevents.Subscriber // feeds kvIndex
	// resident is the gossiped prefix sketch's source when it is built from kvIndex (KV events,
	// gossip and a precise-prefix-cache-scorer to feed it); nil otherwise.
	resident *kvevents.ResidentPrefixes
	replicas *replica.Sharer // the active-active replicas' shared state, nil without --replica-bind
}

// New builds every component and opens the listeners (so their addresses are known before Run).
func New(cfg Config, logger *slog.Logger) (*Gateway, error) {
	cfg.complete()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, log: logger, reg: prometheus.NewRegistry()}
	// The OTEL_* variables are the process's: the OTLP exporters read them from it too.
	tp, err := telemetry.New(context.Background(), cfg.tracingConfig(), os.Getenv, logger, g.reg)
	if err != nil {
		return nil, err
	}
	g.tracing = tp
	g.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	g.store = datastore.NewStore(logger, g.reg, datastore.WithMaxEjectionPercent(cfg.MaxEjectionPercent))
	if cfg.GossipBind != "" {
		g.recent = publish.NewRecentPrefixes(publish.DefaultConfig().MaxHotPrefixes, 0)
	}
	steps := []func() error{
		g.buildDiscovery,
		g.buildScraper,
		g.buildKVEvents,
		g.buildReplicas,
		g.buildScheduling,
		g.buildFrontDoors,
		g.buildHealth,
		g.buildGossip,
		g.buildAutoscale,
		g.listen,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			g.closeListeners()
			_ = g.tracing.Shutdown(context.Background()) // nothing was traced yet
			return nil, err
		}
	}
	return g, nil
}

func (g *Gateway) buildDiscovery() error {
	var (
		src component
		err error
	)
	switch c := g.cfg; {
	case c.Endpoints != "":
		src, err = discovery.NewStatic(c.Endpoints, g.store)
	case c.EndpointsFile != "":
		fc := discovery.DefaultFileConfig()
		fc.Path = c.EndpointsFile
		src, err = discovery.NewFile(fc, g.store, g.log, g.reg)
	default:
		kube, inf, cerr := discovery.NewClients(c.Kubeconfig)
		if cerr != nil {
			return fmt.Errorf("kubernetes clients: %w", cerr)
		}
		pc := discovery.DefaultPoolConfig()
		pc.Name, pc.Namespace, pc.RoleLabel = c.PoolName, c.PoolNamespace, c.RoleLabel
		src, err = discovery.NewPool(pc, kube, inf, g.store, g.log, g.reg)
	}
	if err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	g.components = append(g.components, src)
	return nil
}

func (g *Gateway) buildScraper() error {
	sc := scrape.DefaultConfig()
	sc.Interval = g.cfg.ScrapeInterval
	sc.MaxInterval = max(sc.MaxInterval, sc.Interval)
	sc.MetricsPort, sc.MetricsPath = g.cfg.ModelServerMetricsPort, unquoteArg(g.cfg.ModelServerMetricsPath)
	sc.MetricsScheme, sc.MetricsInsecureSkipVerify = unquoteArg(
		g.cfg.ModelServerMetricsScheme,
	), g.cfg.ModelServerMetricsInsecure
	sc.Families = g.cfg.Families
	s, err := scrape.New(sc, g.store, g.log, g.reg)
	if err != nil {
		return err
	}
	g.components = append(g.components, s)
	return nil
}

// buildKVEvents binds the KV events SUB socket when --kv-events-endpoint is set.
func (g *Gateway) buildKVEvents() error {
	if g.cfg.KVEventsEndpoint == "" {
		return nil
	}
	kc := kvevents.DefaultConfig()
	kc.Endpoint = g.cfg.KVEventsEndpoint
	kc.TrustTopicPod = g.cfg.KVEventsTrustTopic
	var err error
	if g.kvIndex, err = kvevents.NewIndexWith(kc.IndexConfig()); err != nil {
		return fmt.Errorf("--kv-events-endpoint: %w", err)
	}
	sub, err := kvevents.New(kc, g.kvIndex, g.store.View(), g.log, g.reg)
	if err != nil {
		return fmt.Errorf("--kv-events-endpoint: %w", err)
	}
	g.kvSub = sub
	if g.recent != nil { // gossip is on: the sketch may come from the index
		hot := publish.DefaultConfig().MaxHotPrefixes
		g.resident = kvevents.NewResidentPrefixes(g.kvIndex, g.store.View(), 4*hot, hot)
	}
	g.components = append(g.components, sub)
	return nil
}

// choosePrefixSketch settles what the gossiped prefix sketch is built from: the blocks the pods
// hold (the KV event index) when a precise-prefix-cache-scorer feeds it, else the prompts the
// gateway routed.
func (g *Gateway) choosePrefixSketch() {
	switch {
	case g.resident == nil:
	case g.resident.Attached():
		g.recent = nil // nothing to record: the sketch comes from the index
		g.log.Info("gossiped prefix sketch built from the pods' KV cache events")
	default:
		g.resident = nil
		g.log.Info("gossiped prefix sketch built from routing decisions: " +
			"no precise-prefix-cache-scorer feeds the KV event index's prefixes")
	}
}

// KVEventsAddr is the bound address of the KV events socket ("" when off).
func (g *Gateway) KVEventsAddr() string {
	if g.kvSub == nil {
		return ""
	}
	return g.kvSub.Addr()
}

func (g *Gateway) buildScheduling() error {
	sc := scheduling.DefaultConfig()
	sc.Profile, sc.ConfigFile, sc.ConfigText = g.cfg.Profile, g.cfg.ConfigFile, g.cfg.ConfigText
	sc.Services = map[string]any{framework.ServiceRegisterer: prometheus.Registerer(g.reg)}
	if g.kvIndex != nil {
		sc.Services[framework.ServiceKVEventsIndex] = g.kvIndex
	}
	if g.resident != nil {
		sc.Services[framework.ServiceKVResidentPrefixes] = g.resident
	}
	if g.replicas != nil {
		sc.Services[framework.ServicePeerPrefixes] = g.replicas
	}
	s, err := scheduling.New(sc, g.store.View(), g.log, g.reg)
	if err != nil {
		return err
	}
	g.sched = s
	g.choosePrefixSketch()
	fc := flowcontrol.DefaultConfig()
	fc.Enabled = s.FlowControl()
	fc.MaxQueue, fc.TTL = g.cfg.QueueLimit, g.cfg.QueueTTL
	fc.ObjectivePriorities, _ = flowcontrol.ParseObjectivePriorities(g.cfg.ObjectivePriorities) // validated
	fc.MinPriority, fc.MaxPriority = g.cfg.MinPriority, g.cfg.MaxPriority
	g.flow, err = flowcontrol.New(fc, s, flowcontrol.Options{
		Logger: g.log, Registerer: g.reg,
	})
	if err != nil {
		return err
	}
	g.components = append(g.components, g.flow)
	return nil
}

// mapSchedulingError translates the scheduler's sentinels for clients.
func mapSchedulingError(err error) *apierror.Error {
	switch {
	case errors.Is(err, scheduling.ErrUnknownModel):
		return &apierror.Error{
			Status:  404,
			Type:    "invalid_request_error",
			Param:   "model",
			Code:    "model_not_found",
			Message: err.Error(),
		}
	case errors.Is(err, scheduling.ErrNoEndpoints):
		return apierror.Unavailable(err.Error(), 1)
	case errors.Is(err, scheduling.ErrSaturated):
		return apierror.Overloaded(err.Error(), 1)
	case errors.Is(err, scheduling.ErrSLOUnattainable):
		return apierror.SLOUnattainable(err.Error(), 1)
	}
	return nil
}

func (g *Gateway) buildFrontDoors() error {
	bc := bbr.DefaultConfig()
	bc.MaxBodyBytes = g.cfg.MaxBodyBytes
	bc.Adapters, _ = bbr.ParseAdapterMap(g.cfg.AdapterMap) // validated
	router, err := bbr.NewRouter(bc, g.store)
	if err != nil {
		return err
	}
	m, err := pipeline.NewMetrics(g.reg)
	if err != nil {
		return err
	}
	g.bodies = body.NewBudget(memlimit.BodyBudget(g.cfg.MaxInflightBodyBytes, g.cfg.MaxBodyBytes))
	if err := pipeline.RegisterBodyBudget(g.reg, g.bodies); err != nil {
		return err
	}
	po := pipeline.Options{
		Router:        router,
		Flow:          g.flow,
		Hooks:         hooks{g.sched, g.recent, g.replicas},
		Classify:      g.flow.Config(),
		SessionHeader: g.cfg.SessionHeader,
		MapError:      mapSchedulingError,
		Metrics:       m,
		BodyBudget:    g.bodies,
		Logger:        g.log,
		Tracer:        g.tracing.Tracer(),
	}
	if g.cfg.TenantLimitsFile != "" {
		tc := tenantlimits.DefaultConfig()
		tc.Path = g.cfg.TenantLimitsFile
		limits, err := tenantlimits.New(tc, g.log.With("component", "tenantlimits"), g.reg)
		if err != nil {
			return fmt.Errorf("--tenant-limits-file: %w", err)
		}
		po.Tenants = limits
		g.components = append(g.components, limits)
	}
	pipe, err := pipeline.New(po)
	if err != nil {
		return err
	}
	pc := proxy.DefaultConfig()
	pc.Listen, pc.Cluster, pc.Region = g.cfg.Listen, g.cfg.Cluster, g.cfg.Region
	pc.EndpointHeader, pc.MaxAttempts, pc.DrainTimeout, pc.Staleness =
		g.cfg.EndpointHeader, g.cfg.MaxAttempts, g.cfg.DrainTimeout, g.cfg.Staleness
	pc.EndpointHeaderAddress = g.cfg.EndpointHeaderAddress
	pc.Passthrough, _ = openai.ParsePassthroughPaths(g.cfg.PassthroughPaths) // validated
	if g.httpSrv, err = proxy.New(pc, pipe, g.store, g.log, g.reg); err != nil {
		return err
	}
	if g.cfg.ExtProcListen == "" {
		return nil
	}
	ec := extproc.DefaultConfig()
	ec.Listen, ec.Cluster, ec.Region, ec.EndpointHeader =
		g.cfg.ExtProcListen, g.cfg.Cluster, g.cfg.Region, g.cfg.EndpointHeader
	ec.MaxBodyBytes, ec.DrainTimeout, ec.EndpointHeaderAddress = int(
		g.cfg.MaxBodyBytes,
	), g.cfg.DrainTimeout, g.cfg.EndpointHeaderAddress
	ec.BodyTimeout = g.cfg.ExtProcBodyTimeout
	if ec.TLS, err = g.extProcTLS(); err != nil {
		return err
	}
	g.extSrv, err = extproc.New(ec, pipe, g.store, g.log)
	return err
}

func (g *Gateway) listen() error {
	tc, err := g.listenTLS()
	if err != nil {
		return err
	}
	if g.httpLn, err = net.Listen("tcp", g.cfg.Listen); err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	if tc != nil {
		g.httpLn = tls.NewListener(g.httpLn, tc)
	}
	if g.metricsLn, err = net.Listen("tcp", g.cfg.MetricsListen); err != nil {
		return fmt.Errorf("--metrics-listen: %w", err)
	}
	if g.extSrv != nil {
		if g.extLn, err = net.Listen("tcp", g.cfg.ExtProcListen); err != nil {
			return fmt.Errorf("--ext-proc-listen: %w", err)
		}
	}
	if g.health != nil {
		if g.healthLn, err = net.Listen("tcp", g.healthAddress()); err != nil {
			return fmt.Errorf("--grpc-health-port: %w", err)
		}
	}
	return nil
}

// listenTLS returns the TLS configuration of --listen, nil without --tls-cert-file.
func (g *Gateway) listenTLS() (*tls.Config, error) {
	if g.cfg.TLSCertFile == "" {
		return nil, nil
	}
	tc, err := serverTLS(g.cfg.TLSCertFile, g.cfg.TLSKeyFile, g.cfg.TLSClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file: %w", err)
	}
	tc.NextProtos = []string{"h2", "http/1.1"} // a plain tls.Listener: net/http does not set them
	return tc, nil
}

func (g *Gateway) closeListeners() {
	if g.kvSub != nil {
		_ = g.kvSub.Close()
	}
	if g.replicas != nil {
		_ = g.replicas.Close()
	}
	for _, ln := range []net.Listener{g.httpLn, g.extLn, g.metricsLn, g.healthLn} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// HTTPAddr is the bound address of the HTTP proxy.
func (g *Gateway) HTTPAddr() string { return addrOf(g.httpLn) }

// ExtProcAddr is the bound address of the ext_proc server ("" when disabled).
func (g *Gateway) ExtProcAddr() string { return addrOf(g.extLn) }

// HealthAddr is the bound address of the gRPC health port ("" when off).
func (g *Gateway) HealthAddr() string { return addrOf(g.healthLn) }

// MetricsAddr is the bound address of the metrics listener.
func (g *Gateway) MetricsAddr() string { return addrOf(g.metricsLn) }

func addrOf(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// Run runs every component until ctx ends or one fails, then shuts everything down, letting
// in-flight streams finish within DrainTimeout.
func (g *Gateway) Run(ctx context.Context) error {
	eg, ctx := errgroup.WithContext(ctx)
	var rest sync.WaitGroup // everything but the health port, which answers until the rest is done
	run := func(f func() error) {
		rest.Add(1)
		eg.Go(func() error { defer rest.Done(); return f() })
	}
	for _, c := range g.components {
		run(func() error { return c.Run(ctx) })
	}
	run(func() error { return g.httpSrv.Serve(ctx, g.httpLn) })
	if g.extSrv != nil {
		run(func() error { return g.extSrv.Serve(ctx, g.extLn) })
	}
	run(func() error { return g.serveMetrics(ctx) })
	if g.health != nil {
		drained := make(chan struct{})
		go func() { rest.Wait(); close(drained) }()
		eg.Go(func() error { return g.health.Serve(ctx, g.healthLn, drained) })
	}
	err := eg.Wait()
	// The front doors have drained: flush their last spans.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingFlushTimeout)
	defer cancel()
	if ferr := g.tracing.Shutdown(fctx); ferr != nil {
		g.log.Warn("tracing flush failed", "err", ferr)
	}
	return err
}

// tracingFlushTimeout bounds the flush of the spans still queued at shutdown.
const tracingFlushTimeout = 5 * time.Second

// Ready reports whether at least one endpoint has fresh metrics.
func (g *Gateway) Ready() bool { return proxy.Ready(g.store, g.cfg.Staleness, time.Now()) }

// serverTLS returns a server's TLS configuration from a certificate and its key, requiring
// client certificates signed by the CAs of clientCAFile when it is given. The certificate and key
// are read at every handshake (etcd's transport package does this), so a rotated certificate
// takes effect without a restart.
func serverTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	info := transport.TLSInfo{
		CertFile:       certFile,
		KeyFile:        keyFile,
		TrustedCAFile:  clientCAFile,
		ClientCertAuth: clientCAFile != "",
	}
	return info.ServerConfig()
}
