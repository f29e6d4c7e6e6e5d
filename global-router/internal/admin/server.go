// Package admin serves the global router's admin API, switchyard.admin.v1.AdminService, with
// connect-go: gRPC, gRPC-Web and Connect on one HTTP handler (HTTP/1.1 and h2c), together with gRPC
// server reflection (v1 and v1alpha) and the gRPC health service. Every AdminService call must
// carry the router's bearer token ("Authorization: Bearer <token>"); a call without it, or with
// another token, fails with Unauthenticated. Reflection and health answer without a token: they
// expose only the public schema and liveness, and load balancers probe health without secrets.
//
// The service reads the cluster table, the gossip membership and the config view the data path
// uses, writes policies and drains through the config store (etcd, optimistic concurrency), and
// dry-runs the front door's own routing decision for ExplainRoute, so an explanation always
// agrees with what the router would do. Errors are translated to connect codes in one place.
package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"github.com/prometheus/client_golang/prometheus"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
	"github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1/adminv1connect"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
	"github.com/switchyard-dev/switchyard/gossip"
)

// PolicyStore reads and writes model policies with optimistic concurrency. *configstore.Store
// implements it. Implementations must be safe for concurrent use and return errors wrapping
// configstore.ErrNotFound, ErrConflict, ErrInvalid and ErrUnreadable as documented there.
type PolicyStore interface {
	GetPolicy(ctx context.Context, model string) (*adminv1.Policy, error)
	PutPolicy(ctx context.Context, p *adminv1.Policy, expectedRevision int64) (*adminv1.Policy, error)
	DeletePolicy(ctx context.Context, model string, expectedRevision int64) error
	// ListPolicies returns the readable policies and, apart, the stored values that cannot be
	// read.
	ListPolicies(ctx context.Context) ([]*adminv1.Policy, []configstore.UnreadablePolicy, error)
}

// Drainer stores drains of clusters and regions. *configstore.Store implements it. It must be
// safe for concurrent use.
type Drainer interface {
	SetClusterDrain(ctx context.Context, cluster string, drain bool) error
	SetRegionDrain(ctx context.Context, region string, drain bool) error
}

// ConfigSource returns the config view in force. *configstore.Store implements it. It must be
// safe for concurrent use and never return nil.
type ConfigSource interface {
	Snapshot() *configstore.View
}

// ClusterTable is the router's cluster table. *clustertable.Table implements it. It must be safe
// for concurrent use.
type ClusterTable interface {
	// View returns the cluster view without changing what routing sees next.
	View(model string, prefixHashes []uint64) []clustertable.Entry
}

// Gossip is the router's gossip node: capacity summaries, membership and change signals.
// *gossip.Node implements it. It must be safe for concurrent use.
type Gossip interface {
	Snapshot() []gossip.Summary
	Members() []gossip.Member
	Subscribe() (<-chan struct{}, func())
}

// Explainer runs the routing decision for a request without sending it. *frontdoor.Server
// implements it; ExplainRoute reports exactly its decision. It must be safe for concurrent use.
type Explainer interface {
	Decide(model string, prompt []byte) ([]clustertable.Entry, routing.Decision, error)
	// Policy returns the policy a request for model is decided with now, or the error it is
	// refused with when none is in force (routing.ErrPolicyNotLoaded, ErrPolicyUnreadable).
	Policy(model string) (routing.Policy, error)
}

// RegistrationStore reads and writes cluster registrations with optimistic concurrency.
// *configstore.Store implements it. Implementations must be safe for concurrent use and return
// errors wrapping configstore.ErrNotFound, ErrConflict and ErrInvalid as documented there.
type RegistrationStore interface {
	PutRegistration(
		ctx context.Context,
		r *adminv1.ClusterRegistration,
		expectedRevision int64,
		allowCleartext bool,
	) (*adminv1.ClusterRegistration, error)
	DeleteRegistration(ctx context.Context, cluster string, expectedRevision int64) error
	ListRegistrations(ctx context.Context) ([]*adminv1.ClusterRegistration, error)
}

// RegionRegistrationStore reads and writes region registrations with optimistic concurrency.
// *configstore.Store implements it, with RegistrationStore's error contract; it must be safe for
// concurrent use.
type RegionRegistrationStore interface {
	PutRegionRegistration(
		ctx context.Context,
		r *adminv1.RegionRegistration,
		expectedRevision int64,
	) (*adminv1.RegionRegistration, error)
	DeleteRegionRegistration(ctx context.Context, region string, expectedRevision int64) error
	ListRegionRegistrations(ctx context.Context) ([]*adminv1.RegionRegistration, error)
}

// IdentityMode reports how the router checks capacity summaries now. *identity.Verifier
// implements it. It must be safe for concurrent use.
type IdentityMode interface {
	Mode() string
}

// Deps are the components the service reads and writes. Every field is required.
type Deps struct {
	// Policies reads and writes policies (the config store).
	Policies PolicyStore
	// Drains writes drains (the config store).
	Drains Drainer
	// Config is the watched config view the data path uses (the config store).
	Config ConfigSource
	// Clusters is the cluster table (passive health, in-flight counts, RTTs).
	Clusters ClusterTable
	// Gossip is the router's gossip node (summaries, members, change signals).
	Gossip Gossip
	// Explainer is the front door's routing decision.
	Explainer Explainer
	// Registrations reads and writes cluster registrations (the config store).
	Registrations RegistrationStore
	// Regions reads and writes region registrations (the config store); nil answers
	// RegisterRegion and RevokeRegion Unimplemented and lists no regions.
	Regions RegionRegistrationStore
	// Identity is the router's summary verifier (its mode).
	Identity IdentityMode
	// Tenants reads and writes tenants' limits and API key digests (the config store).
	Tenants TenantStore
}

// TenantStore reads and writes tenants with optimistic concurrency. *configstore.Store implements
// it. Implementations must be safe for concurrent use and return errors wrapping
// configstore.ErrNotFound, ErrConflict, ErrInvalid and ErrUnreadable as documented there.
type TenantStore interface {
	GetTenant(ctx context.Context, name string) (*adminv1.Tenant, error)
	PutTenant(ctx context.Context, t *adminv1.Tenant, expectedRevision int64) (*adminv1.Tenant, error)
	DeleteTenant(ctx context.Context, name string, expectedRevision int64) error
	ListTenants(ctx context.Context) ([]*adminv1.Tenant, error)
}

func (d Deps) validate() error {
	switch {
	case d.Policies == nil:
		return errors.New("admin: Deps.Policies is nil")
	case d.Drains == nil:
		return errors.New("admin: Deps.Drains is nil")
	case d.Config == nil:
		return errors.New("admin: Deps.Config is nil")
	case d.Clusters == nil:
		return errors.New("admin: Deps.Clusters is nil")
	case d.Gossip == nil:
		return errors.New("admin: Deps.Gossip is nil")
	case d.Explainer == nil:
		return errors.New("admin: Deps.Explainer is nil")
	case d.Registrations == nil:
		return errors.New("admin: Deps.Registrations is nil")
	case d.Identity == nil:
		return errors.New("admin: Deps.Identity is nil")
	case d.Tenants == nil:
		return errors.New("admin: Deps.Tenants is nil")
	}
	return nil
}

// Config configures the admin service.
type Config struct {
	// Token is the bearer token every AdminService call must carry. Required. Server.SetTokens
	// replaces it while serving.
	Token string
	// Region is the router's region; ExplainRoute decides for it. Required.
	Region string
	// WatchInterval is the minimum time between two WatchClusters messages when the client asks
	// for none (interval_ms = 0). Default 250 ms.
	WatchInterval time.Duration
	// MinWatchInterval is the smallest interval_ms a client may ask for; smaller requests are
	// raised to it. Default 50 ms.
	MinWatchInterval time.Duration
	// WatchResync is how often a watch re-reads the table without a change signal, to notice
	// passive-health changes, which send no signal. Default 2 s.
	WatchResync time.Duration
	// StoreTimeout bounds one etcd operation of a call. Default 5 s.
	StoreTimeout time.Duration
	// MaxRequestBytes bounds a request message (ExplainRoute carries a prompt). Default 8 MiB.
	MaxRequestBytes int
	// AllowCleartextGateways lets RegisterCluster store http:// gateway URLs
	// (--allow-cleartext-gateways). Default false: https:// only.
	AllowCleartextGateways bool
}

// DefaultConfig returns the defaults documented on Config, with no token and no region.
func DefaultConfig() Config {
	return Config{
		WatchInterval:    250 * time.Millisecond,
		MinWatchInterval: 50 * time.Millisecond,
		WatchResync:      2 * time.Second,
		StoreTimeout:     5 * time.Second,
		MaxRequestBytes:  8 << 20,
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Token == "":
		return errors.New("admin: Token is empty; the admin API is never served without a token")
	case c.Region == "":
		return errors.New("admin: Region is empty")
	case c.WatchInterval <= 0:
		return fmt.Errorf("admin: WatchInterval %v must be positive", c.WatchInterval)
	case c.MinWatchInterval <= 0 || c.MinWatchInterval > c.WatchInterval:
		return fmt.Errorf("admin: MinWatchInterval %v must be positive and at most WatchInterval", c.MinWatchInterval)
	case c.WatchResync <= 0:
		return fmt.Errorf("admin: WatchResync %v must be positive", c.WatchResync)
	case c.StoreTimeout <= 0:
		return fmt.Errorf("admin: StoreTimeout %v must be positive", c.StoreTimeout)
	case c.MaxRequestBytes <= 0:
		return fmt.Errorf("admin: MaxRequestBytes %d must be positive", c.MaxRequestBytes)
	}
	return nil
}

// Server implements adminv1connect.AdminServiceHandler. It is safe for concurrent use.
type Server struct {
	cfg     Config
	deps    Deps
	log     *slog.Logger
	metrics *metrics
	tokens  atomic.Pointer[tokenSet] // never nil after New
}

var _ adminv1connect.AdminServiceHandler = (*Server)(nil)

// New returns the admin service over deps. Its collectors are registered on reg (none when reg is
// nil); logger may be nil (nothing is logged).
func New(cfg Config, deps Deps, logger *slog.Logger, reg prometheus.Registerer) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := deps.validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	ts, err := newTokenSet([]string{cfg.Token})
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, deps: deps, log: logger, metrics: m}
	s.tokens.Store(ts)
	return s, nil
}

// Handler returns the HTTP handler that serves AdminService (behind the bearer token), gRPC
// reflection v1 and v1alpha, and gRPC health. Serve it over HTTP/1.1 and h2c (or TLS) so that
// gRPC, gRPC-Web and Connect clients all work on one port.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	path, service := adminv1connect.NewAdminServiceHandler(s,
		connect.WithInterceptors(s.metrics.interceptor(), s.authInterceptor(), s.errorInterceptor()),
		connect.WithReadMaxBytes(s.cfg.MaxRequestBytes),
	)
	mux.Handle(path, s.requireToken(service))
	reflector := grpcreflect.NewStaticReflector(adminv1connect.AdminServiceName, grpchealth.HealthV1ServiceName)
	mux.Handle(grpcreflect.NewHandlerV1(reflector))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector))
	mux.Handle(grpchealth.NewHandler(grpchealth.NewStaticChecker(adminv1connect.AdminServiceName)))
	return mux
}

// storeCtx bounds one etcd operation.
func (s *Server) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.StoreTimeout)
}
