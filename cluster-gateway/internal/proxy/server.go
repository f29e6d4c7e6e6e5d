// Package proxy is the gateway's OpenAI-compatible HTTP front door, a thin adapter over the
// request pipeline (package pipeline, which the Envoy ext_proc front door drives too). It reads
// the body once, within a deadline, has the pipeline pick a model server, and forwards the
// request, streaming SSE responses chunk by chunk. It retries another endpoint on a connect
// failure or a 503/429 before the first response byte, strips client-supplied routing headers,
// tags every answer with the serving cluster, region and endpoint (the pod's name), aborts an
// answer whose model server broke off, and drains in-flight streams at shutdown.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract/openai"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline"
)

// Config configures the HTTP front door.
type Config struct {
	// Listen is the address to serve on, e.g. ":8080". Required.
	Listen string
	// Cluster and Region are sent as x-switchyard-cluster and x-switchyard-region.
	Cluster, Region string
	// EndpointHeader adds x-switchyard-endpoint, the name of the pod that served the request
	// (see datastore.Endpoint.Name), to responses. Default true.
	EndpointHeader bool
	// EndpointHeaderAddress shows the pod's ip:port in x-switchyard-endpoint instead of its
	// name, for debugging: the address is internal to the cluster. Default false.
	EndpointHeaderAddress bool
	// MaxAttempts bounds the endpoints tried per request (first try plus retries). Default 3.
	MaxAttempts int
	// DrainTimeout bounds how long shutdown waits for in-flight streams. Default 30 s.
	DrainTimeout time.Duration
	// Staleness is the metrics age under which an endpoint counts for readiness. Default 2 s.
	Staleness time.Duration
	// DialTimeout bounds connecting to a model server. Default 2 s.
	DialTimeout time.Duration
	// BodyReadTimeout bounds reading a request body, from the end of its headers: a client that
	// trickles its body is answered 400 instead of holding a request slot forever. The deadline
	// is lifted once the body is in, so the streamed answer is not bounded. Default 60 s;
	// 0 means no bound.
	BodyReadTimeout time.Duration
	// Passthrough are the engine paths forwarded, POST only, to a pod serving the model the
	// request names, read from a JSON body or a multipart form field (see
	// openai.PassthroughPath); any other path is a 404. Default openai.DefaultPassthroughPaths.
	Passthrough []openai.PassthroughPath
}

// Connection limits of the proxy's listener (the same as the router's front door).
const (
	// readHeaderTimeout cuts off a client that trickles its headers.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout closes a keep-alive or h2c connection without a request for this long.
	idleTimeout = 2 * time.Minute
	// maxHeaderBytes bounds a request's header block: HTTP/1.1 answers 431 beyond it and h2c
	// advertises it as SETTINGS_MAX_HEADER_LIST_SIZE (about Envoy's 60 KiB default).
	maxHeaderBytes = 64 << 10
	// maxConcurrentStreams bounds the concurrent requests of one HTTP/2 connection (h2c or
	// TLS). It matches the body budget: each stream's body starts in a buffer of at most 4 KiB
	// (contract/body.FirstSize) and grows only as its bytes arrive, so one connection's streams
	// make the gateway hold at most about 1 MiB it was not sent, besides the bodies' bytes,
	// which the in-flight budget bounds.
	maxConcurrentStreams = 250
	// maxReceiveBuffer is HTTP/2's flow-control window per connection and per stream: the body
	// bytes a client may send ahead of the handler reading them (net/http's default, stated).
	maxReceiveBuffer = 1 << 20
)

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Listen:         ":8080",
		EndpointHeader: true,
		MaxAttempts:    3,
		DrainTimeout:   30 * time.Second,
		Staleness:      2 * time.Second,
		DialTimeout:    2 * time.Second,

		BodyReadTimeout: time.Minute,
		Passthrough:     mustPassthrough(openai.DefaultPassthroughPaths),
	}
}

// mustPassthrough parses a pass-through list known to be valid.
func mustPassthrough(s string) []openai.PassthroughPath {
	p, err := openai.ParsePassthroughPaths(s)
	if err != nil {
		panic(err)
	}
	return p
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Listen == "":
		return errors.New("proxy: Listen is required")
	case c.MaxAttempts < 1:
		return fmt.Errorf("proxy: MaxAttempts must be at least 1, got %d", c.MaxAttempts)
	case c.DrainTimeout <= 0 || c.Staleness <= 0 || c.DialTimeout <= 0:
		return errors.New("proxy: DrainTimeout, Staleness and DialTimeout must be positive")
	case c.BodyReadTimeout < 0:
		return fmt.Errorf("proxy: BodyReadTimeout must not be negative, got %s", c.BodyReadTimeout)
	}
	// The list's own checks (paths the front door serves itself, repeats, characters).
	if _, err := openai.ParsePassthroughPaths(openai.FormatPassthroughPaths(c.Passthrough)); err != nil {
		return fmt.Errorf("proxy: Passthrough: %w", err)
	}
	return nil
}

// Store is the endpoint view the proxy reads: endpoints for readiness, models for /v1/models.
// The datastore's Store satisfies it. Implementations must be safe for concurrent use.
type Store interface {
	Endpoints() []*datastore.Endpoint
	Models() []string
}

// Server is the HTTP front door. It is safe for concurrent use.
type Server struct {
	cfg       Config
	pipe      *pipeline.Pipeline
	store     Store
	log       *slog.Logger
	metrics   *metrics
	transport *http.Transport
	draining  atomic.Bool
	active    atomic.Int64 // requests admitted before the drain began, still running
}

// New returns a Server deciding with pipe. Its own metrics (retries, truncated answers) are
// registered on reg (nil registers nothing); the request metrics are the pipeline's.
func New(
	cfg Config,
	pipe *pipeline.Pipeline,
	store Store,
	logger *slog.Logger,
	reg prometheus.Registerer,
) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pipe == nil || store == nil {
		return nil, errors.New("proxy: a pipeline and a store are required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("proxy: metrics: %w", err)
	}
	return &Server{
		cfg:       cfg,
		pipe:      pipe,
		store:     store,
		log:       logger,
		metrics:   m,
		transport: NewTransport(cfg.DialTimeout),
	}, nil
}

// NewTransport returns the transport tuned for model servers: many idle keep-alive connections
// per pod, no transparent compression (bytes pass through untouched), no response timeout (a
// long prefill is legitimate; the client's cancellation bounds it).
func NewTransport(dialTimeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ExpectContinueTimeout: 0,
		WriteBufferSize:       64 << 10,
		ReadBufferSize:        32 << 10,
	}
}

// Handler returns the front door's routes: the inference routes (completions, chat
// completions, embeddings, responses), the pass-through paths of Config.Passthrough, the model
// list and health. Any other request gets an OpenAI-style 404 (405 for a served path and
// another method).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, p := range openai.InferencePaths {
		mux.HandleFunc("POST "+p, withTiming(s.serveInference))
	}
	for _, p := range s.cfg.Passthrough {
		h := s.servePassthrough
		if p.Model == openai.ModelForm {
			h = s.serveForm
		}
		mux.HandleFunc("POST "+p.Path, withTiming(h))
	}
	mux.HandleFunc("GET "+openai.PathModels, s.serveModels)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", s.ServeReady)
	return s.countActive(openai.NoRoute(mux, s.noRoute))
}

// noRoute logs and counts a request refused for want of a route.
func (s *Server) noRoute(r *http.Request, status int) {
	s.metrics.unrouted(status)
	path := r.URL.Path
	if len(path) > maxLoggedPath {
		path = path[:maxLoggedPath] + "..."
	}
	s.log.Debug("request refused: no such route", "method", r.Method, "path", path, "status", status)
}

// maxLoggedPath bounds the part of a refused request's path that is logged.
const maxLoggedPath = 256

// Run listens on Config.Listen and serves until ctx is done, then drains.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("proxy: listen: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx is done. Then it answers new requests 503 with Retry-After (and
// Connection: close) while in-flight streams finish, stops accepting once they have, and closes
// whatever still runs after DrainTimeout.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.serve(ctx, ln, s.Handler())
}

// serve is Serve with the routes of h.
func (s *Server) serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	// HTTP/1.1 and cleartext HTTP/2 (prior knowledge), so routers can multiplex over h2c; on a
	// TLS listener, HTTP/2 by ALPN.
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	protocols.SetHTTP2(true)
	srv := &http.Server{Handler: h, Protocols: &protocols,
		ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes,
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: maxConcurrentStreams,
			MaxReceiveBufferPerConnection: maxReceiveBuffer, MaxReceiveBufferPerStream: maxReceiveBuffer},
		// Its own errors (TLS handshakes refused, a handler's panic) go to the structured log.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("proxy: serve: %w", err)
	case <-ctx.Done():
	}
	s.draining.Store(true)
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.DrainTimeout)
	defer cancel()
	s.waitIdle(dctx) // keep answering 503 on the open listener until the last stream ends
	if err := srv.Shutdown(dctx); err != nil {
		s.log.Warn("proxy drain timed out; closing streams", "err", err)
		_ = srv.Close()
	}
	s.transport.CloseIdleConnections()
	return nil
}

// ServeReady answers 200 when at least one endpoint has fresh metrics and a known model list,
// else 503.
func (s *Server) ServeReady(w http.ResponseWriter, _ *http.Request) {
	if s.draining.Load() {
		http.Error(w, "draining", http.StatusServiceUnavailable)
		return
	}
	if !Ready(s.store, s.cfg.Staleness, time.Now()) {
		http.Error(w, "no endpoint with fresh metrics and a known model list", http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// Ready reports whether at least one endpoint has metrics younger than staleness at now and a
// model list: before its models are known a pod can be routed nothing (every request would get
// 404 model_not_found), so a gateway whose pods all lack one is not ready.
func Ready(store Store, staleness time.Duration, now time.Time) bool {
	for _, ep := range store.Endpoints() {
		if ep.MetricsAge(now) <= staleness && ep.Models() != nil {
			return true
		}
	}
	return false
}

// serveModels answers the union of what ready endpoints serve, in OpenAI's list shape.
func (s *Server) serveModels(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(ModelList(s.store.Models()))
}

// errorAnswer writes e unless the client is gone.
func (s *Server) errorAnswer(w http.ResponseWriter, r *http.Request, e *apierror.Error) {
	if r.Context().Err() != nil {
		return
	}
	s.setServedBy(w.Header(), nil)
	traceError(r, e)
	e.Write(w)
}
