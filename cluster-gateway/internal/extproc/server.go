// Package extproc is the gateway's Envoy front door: an ext_proc v3 ExternalProcessor speaking the
// Gateway API Inference Extension's endpoint-picker protocol. Envoy streams the request headers and
// body (FULL_DUPLEX_STREAMED); once the body's last chunk arrives the gateway schedules the request
// and answers the request-headers message with the header x-gateway-destination-endpoint and the
// dynamic metadata envoy.lb → x-gateway-destination-endpoint ("ip:port,fallback,..."), then streams
// the body back unchanged. Refusals are immediate responses (400/404/413, 429 with
// x-switchyard-overflow, 503). A request body that has not arrived in whole within BodyTimeout of
// its headers is answered 408 and its stream ended. Response headers and body pass through while
// the gateway measures time to first token and usage. A gRPC health service shares the port;
// Health is the one of the separate health port Kubernetes probes (GIE's services). The
// decisions are the request pipeline's (package pipeline, which the HTTP proxy drives too): this
// package is the Envoy adapter, the stream's state machine and the responses Envoy expects.
package extproc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline"
)

// Protocol names (GIE's defaults).
const (
	// MetadataNamespace wraps the destination in the response's dynamic metadata.
	MetadataNamespace = "envoy.lb"
	// SubsetNamespace is the request metadata namespace of Envoy's subset hint.
	SubsetNamespace = "envoy.lb.subset_hint"
	// ChunkLimit is the largest body chunk sent back to Envoy (GIE's limit, under Envoy's 64 KiB).
	ChunkLimit = 62000
)

// Config configures the ext_proc server.
type Config struct {
	// Listen is the gRPC address, e.g. ":9002". Required.
	Listen string
	// Cluster and Region are added to responses as x-switchyard-cluster and x-switchyard-region.
	Cluster, Region string
	// EndpointHeader adds x-switchyard-endpoint, the name of the pod chosen, to responses.
	// Default true.
	EndpointHeader bool
	// EndpointHeaderAddress shows the pod's ip:port in x-switchyard-endpoint instead of its
	// name, for debugging. Default false.
	EndpointHeaderAddress bool
	// MaxBodyBytes bounds the buffered request body; larger bodies get 413. Default 32 MiB.
	MaxBodyBytes int
	// BodyTimeout bounds the time from a request's headers to the end of its body. Envoy
	// streams the body as its client sends it, so a client that trickles or stalls its upload
	// would otherwise hold the stream and the body's share of the in-flight body budget for as
	// long as it likes; past the deadline the request is answered 408 (OpenAI-style JSON, an
	// immediate response), its body released and its stream ended. The response is not bounded:
	// a generation streams for as long as it needs. Default 30 s; must be positive.
	BodyTimeout time.Duration
	// DrainTimeout bounds how long shutdown waits for open streams. Default 30 s.
	DrainTimeout time.Duration
	// TLS, when set, serves ext_proc and health over TLS (HTTP/2 by ALPN), as GIE's endpoint
	// picker does with --secure-serving; nil serves HTTP/2 cleartext. Default nil.
	TLS *tls.Config
}

// DefaultBodyTimeout is Config.BodyTimeout's default: about what a client on a slow link needs
// to upload the largest body (32 MiB), far longer than Envoy takes to forward a normal one.
const DefaultBodyTimeout = 30 * time.Second

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Listen: ":9002", EndpointHeader: true, MaxBodyBytes: 32 << 20, BodyTimeout: DefaultBodyTimeout,
		DrainTimeout: 30 * time.Second}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Listen == "":
		return errors.New("extproc: Listen is required")
	case c.MaxBodyBytes <= 0:
		return fmt.Errorf("extproc: MaxBodyBytes must be positive, got %d", c.MaxBodyBytes)
	case c.BodyTimeout <= 0:
		return fmt.Errorf("extproc: BodyTimeout must be positive, got %v", c.BodyTimeout)
	case c.DrainTimeout <= 0:
		return fmt.Errorf("extproc: DrainTimeout must be positive, got %v", c.DrainTimeout)
	}
	return nil
}

// Endpoints lists the current endpoints (for requests without a body). The datastore's Store
// satisfies it; it must be safe for concurrent use.
type Endpoints interface {
	Endpoints() []*datastore.Endpoint
}

// Server is the ExternalProcessor. It is safe for concurrent use.
type Server struct {
	extprocv3.UnimplementedExternalProcessorServer
	cfg   Config
	pipe  *pipeline.Pipeline
	store Endpoints
	log   *slog.Logger
	pool  *bufferPool // gRPC's buffers and request bodies assembled from chunks (see addChunk)
}

var _ extprocv3.ExternalProcessorServer = (*Server)(nil)

// New returns a Server deciding with pipe.
func New(cfg Config, pipe *pipeline.Pipeline, store Endpoints, logger *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pipe == nil || store == nil {
		return nil, errors.New("extproc: a pipeline and endpoints are required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, pipe: pipe, store: store, log: logger, pool: newBufferPool()}, nil
}

// Run listens on Config.Listen and serves until ctx is done.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("extproc: listen: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Connection limits of the ext_proc listener.
const (
	// maxConcurrentStreams bounds the exchanges (requests) in flight on one connection. An
	// exchange lives as long as its request, generation included, and costs a goroutine and its
	// gRPC receive state besides the body, which the body budget bounds across all streams;
	// 1,024 is Envoy's default circuit-breaker limit of concurrent requests to one cluster
	// (max_requests), so a default Envoy fits on one connection, and an Envoy whose limits
	// were raised opens another connection when one is full (its HTTP/2 pool marks a
	// connection busy at the stream limit and dials a new one for pending requests). It
	// bounds what one client connection can hold open at 1,024 goroutines instead of 10,000.
	maxConcurrentStreams = 1024
	// maxConnectionIdle closes a connection without a stream for this long.
	maxConnectionIdle = 10 * time.Minute
	// minPingInterval is the shortest keepalive ping interval a client may use.
	minPingInterval = 10 * time.Second
	// handshakeTimeout bounds a new connection's HTTP/2 handshake.
	handshakeTimeout = 10 * time.Second
)

// MaxMessageBytes bounds one ext_proc message the server receives. gRPC reads a message's
// length first and refuses a longer one before reading its payload, so this bounds what one
// message can make the server hold before the body budget sees its chunk (grpc-go's default,
// 4 MiB, times the 1,024 streams of a connection was 4 GiB a connection). Envoy sends the body
// in chunks as they arrive (FULL_DUPLEX_STREAMED; its codecs deliver at most 64 KiB at a time)
// and holds at most its per-connection buffer limit (1 MiB by default) of a body at once, so a
// chunk needs at most 1 MiB; the rest is room for the message's headers, metadata and framing.
// gRPC ends the stream of a refused message with RESOURCE_EXHAUSTED naming both sizes (see
// exchange.tooLarge); the connection's other streams carry on. It is not a flag: a body larger
// than one message arrives in several, up to Config.MaxBodyBytes.
const MaxMessageBytes = 1<<20 + 64<<10

// Serve serves ext_proc and gRPC health on ln until ctx is done, then reports NOT_SERVING and
// stops gracefully, closing streams still open after DrainTimeout.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	opts := []grpc.ServerOption{experimental.BufferPool(s.pool), grpc.ForceServerCodecV2(codec{pool: s.pool}),
		// Envoy multiplexes every request's exchange over a few connections: bound the streams
		// one connection may hold far above what a proxy needs, close connections idle for long,
		// accept Envoy's keepalive pings (grpc-go's default would disconnect a client pinging
		// more often than every 5 minutes) and cut off a client that never finishes the
		// HTTP/2 handshake.
		grpc.MaxConcurrentStreams(maxConcurrentStreams),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: maxConnectionIdle}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: minPingInterval, PermitWithoutStream: true}),
		grpc.ConnectionTimeout(handshakeTimeout),
		// gRPC's default is 4 MiB a message, assembled before the body budget sees it.
		grpc.MaxRecvMsgSize(MaxMessageBytes)}
	if s.cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.cfg.TLS)))
	}
	g := grpc.NewServer(opts...)
	extprocv3.RegisterExternalProcessorServer(g, s)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(extprocv3.ExternalProcessor_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, hs)
	errc := make(chan error, 1)
	go func() { errc <- g.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("extproc: serve: %w", err)
	case <-ctx.Done():
	}
	hs.Shutdown()
	stopped := make(chan struct{})
	go func() { g.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(s.cfg.DrainTimeout):
		s.log.Warn("ext_proc drain timed out; closing streams")
		g.Stop()
	}
	return nil
}

// Process handles one HTTP request's ext_proc stream.
func (s *Server) Process(stream extprocv3.ExternalProcessor_ProcessServer) error {
	x := newExchange(s, stream)
	defer x.close()
	return x.run()
}
