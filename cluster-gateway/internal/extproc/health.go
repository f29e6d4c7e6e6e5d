package extproc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// The services of the gRPC health port, as GIE's endpoint picker names them: its Helm chart
// probes "inference-extension", or "liveness" and "readiness" with leader election.
const (
	HealthServiceGIE       = "inference-extension"
	HealthServiceLiveness  = "liveness"
	HealthServiceReadiness = "readiness"
)

// HealthServices lists every service the health port answers for: "" (the server as a whole),
// GIE's three and the ext_proc service.
func HealthServices() []string {
	return []string{
		"",
		HealthServiceGIE,
		HealthServiceLiveness,
		HealthServiceReadiness,
		extprocv3.ExternalProcessor_ServiceDesc.ServiceName,
	}
}

// HealthConfig configures the health port's server.
type HealthConfig struct {
	// Ready reports whether the gateway can take requests: the test its /readyz answers by. It
	// must be safe for concurrent use. Required.
	Ready func() bool
	// WatchInterval is how often a Watch stream looks at readiness again. Default 1 s.
	WatchInterval time.Duration
}

// DefaultHealthConfig returns the defaults; Ready must still be set.
func DefaultHealthConfig() HealthConfig { return HealthConfig{WatchInterval: time.Second} }

// Validate checks the configuration.
func (c HealthConfig) Validate() error {
	switch {
	case c.Ready == nil:
		return errors.New("extproc: HealthConfig.Ready is required")
	case c.WatchInterval <= 0:
		return fmt.Errorf("extproc: HealthConfig.WatchInterval must be positive, got %v", c.WatchInterval)
	}
	return nil
}

// Health is the gRPC health service of the health port (GIE's --grpc-health-port), which
// Kubernetes probes. Every service but "liveness" is SERVING only while the gateway is ready;
// "liveness" is SERVING while the process runs, so a pool without ready pods makes the gateway
// unready but never has it restarted. All are NOT_SERVING once it drains. It is safe for
// concurrent use.
type Health struct {
	healthpb.UnimplementedHealthServer
	cfg      HealthConfig
	log      *slog.Logger
	draining atomic.Bool
}

var _ healthpb.HealthServer = (*Health)(nil)

// NewHealth returns the health service. logger may be nil.
func NewHealth(cfg HealthConfig, logger *slog.Logger) (*Health, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Health{cfg: cfg, log: logger}, nil
}

// status returns a service's status; ok is false for a service the port does not know.
func (h *Health) status(service string) (s healthpb.HealthCheckResponse_ServingStatus, ok bool) {
	var serving bool
	switch service {
	case HealthServiceLiveness:
		serving = !h.draining.Load()
	case "", HealthServiceGIE, HealthServiceReadiness, extprocv3.ExternalProcessor_ServiceDesc.ServiceName:
		serving = !h.draining.Load() && h.cfg.Ready()
	default:
		return healthpb.HealthCheckResponse_SERVICE_UNKNOWN, false
	}
	if serving {
		return healthpb.HealthCheckResponse_SERVING, true
	}
	return healthpb.HealthCheckResponse_NOT_SERVING, true
}

// Check answers a probe. An unknown service is NOT_FOUND, as the health protocol asks.
func (h *Health) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	s, ok := h.status(req.GetService())
	if !ok {
		h.log.Debug("health check of an unknown service", "service", req.GetService())
		return nil, status.Errorf(codes.NotFound, "unknown service %q; known: %q", req.GetService(), HealthServices())
	}
	return &healthpb.HealthCheckResponse{Status: s}, nil
}

// List returns every service's status.
func (h *Health) List(context.Context, *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	out := &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{}}
	for _, svc := range HealthServices() {
		s, _ := h.status(svc)
		out.Statuses[svc] = &healthpb.HealthCheckResponse{Status: s}
	}
	return out, nil
}

// Watch sends a service's status, and again whenever it changes (looked at every
// WatchInterval), until the client leaves. An unknown service is SERVICE_UNKNOWN, as the health
// protocol asks, and may become known no more than it is.
func (h *Health) Watch(req *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	tick := time.NewTicker(h.cfg.WatchInterval)
	defer tick.Stop()
	last := healthpb.HealthCheckResponse_ServingStatus(-1)
	for {
		if s, _ := h.status(req.GetService()); s != last {
			if err := stream.Send(&healthpb.HealthCheckResponse{Status: s}); err != nil {
				return err
			}
			last = s
		}
		select {
		case <-stream.Context().Done():
			return status.FromContextError(stream.Context().Err()).Err()
		case <-tick.C:
		}
	}
}

// Limits of the health port: its clients are the kubelet and a few tools, each with a short
// probe, so a handful of streams a connection is plenty.
const (
	healthMaxStreams       = 16
	healthMaxIdle          = 5 * time.Minute
	healthHandshakeTimeout = 5 * time.Second
	// healthMaxMessage bounds a request message: a service name, a few bytes (gRPC's default,
	// 4 MiB, would let each of a connection's streams hold that much).
	healthMaxMessage = 4 << 10
)

// Serve serves the health service on ln, in cleartext (the kubelet's gRPC probes use no TLS),
// until ctx is done; from then on it answers NOT_SERVING (the gateway drains) until drained is
// closed, and stops.
func (h *Health) Serve(ctx context.Context, ln net.Listener, drained <-chan struct{}) error {
	g := grpc.NewServer(
		grpc.MaxConcurrentStreams(healthMaxStreams),
		grpc.ConnectionTimeout(healthHandshakeTimeout),
		grpc.MaxRecvMsgSize(
			healthMaxMessage,
		),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: healthMaxIdle}),
	)
	healthpb.RegisterHealthServer(g, h)
	errc := make(chan error, 1)
	go func() { errc <- g.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("extproc: health: serve: %w", err)
	case <-ctx.Done():
	}
	h.draining.Store(true)
	select {
	case <-drained:
	case err := <-errc:
		return fmt.Errorf("extproc: health: serve: %w", err)
	}
	g.Stop()
	return nil
}
