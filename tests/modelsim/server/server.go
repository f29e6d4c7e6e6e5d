// Package server is modelsim's HTTP front end: an OpenAI-compatible API (completions, chat
// completions and responses, streaming and not; embeddings), /v1/models, health endpoints and Prometheus metrics with
// the
// names of vLLM, SGLang or TensorRT-LLM, all backed by a simulated engine running in real time
// scaled by Config.TimeScale.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/kvevents"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
)

// Server is one simulated model server. Create it with New and run it with Run or Serve.
type Server struct {
	cfg      Config
	log      *slog.Logger
	engine   *engine.Engine
	clock    *engine.ScaledClock
	adapters map[string]bool
	gatherer prometheus.Gatherer
	handler  http.Handler
	created  int64
	ids      atomic.Uint64

	readyOnce sync.Once
	ready     chan struct{}
	addr      atomic.Value // net.Addr
	draining  atomic.Bool

	pd            *pdMetrics
	prefillClient *http.Client
}

// New validates cfg and builds a server. Its metrics are registered on reg and /metrics serves
// them when reg is also a prometheus.Gatherer (a *prometheus.Registry); with a nil reg the server
// uses a registry of its own. Each server needs its own registry: metric names repeat per server.
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("modelsim config: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	ecfg, err := cfg.EngineConfig()
	if err != nil {
		return nil, fmt.Errorf("modelsim config: %w", err)
	}
	eng, err := engine.New(ecfg, logger)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, log: logger, engine: eng, clock: engine.NewScaledClock(cfg.TimeScale),
		adapters: map[string]bool{}, created: time.Now().Unix(), ready: make(chan struct{}),
	}
	for _, a := range cfg.LoRAs {
		s.adapters[a] = true
	}
	if err := reg.Register(newCollector(cfg, eng)); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	if s.pd, err = newPDMetrics(reg); err != nil {
		return nil, err
	}
	s.prefillClient = &http.Client{Timeout: prefillTimeout}
	s.gatherer, _ = reg.(prometheus.Gatherer)
	s.handler = s.routes()
	return s, nil
}

// Config returns the server's configuration.
func (s *Server) Config() Config { return s.cfg }

// Snapshot returns the simulated engine's current state.
func (s *Server) Snapshot() engine.Snapshot { return s.engine.Snapshot() }

// Handler returns the server's HTTP handler (for tests that bring their own http.Server).
func (s *Server) Handler() http.Handler { return s.handler }

// Ready is closed once the server listens; Addr is valid from then on.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr returns the bound address, or nil before the server listens.
func (s *Server) Addr() net.Addr {
	a, _ := s.addr.Load().(net.Addr)
	return a
}

// Run listens on Config.Listen and serves until ctx is done (see Serve).
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("modelsim listen %s: %w", s.cfg.Listen, err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx is done, then stops accepting, lets in-flight requests (streams
// included) finish within Config.DrainTimeout, and stops the engine. It closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.addr.Store(ln.Addr())
	stopPublisher, err := s.startPublisher(ln.Addr().String())
	if err != nil {
		_ = ln.Close()
		return err
	}
	defer stopPublisher()
	s.readyOnce.Do(func() { close(s.ready) })
	stopEngine := s.startEngine()
	defer stopEngine()

	hs := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	s.log.Info("modelsim serving", "addr", ln.Addr().String(), "model", s.cfg.Model,
		"profile", s.cfg.Profile, "engine", s.cfg.Engine, "physics", s.cfg.Physics, "time_scale", s.cfg.TimeScale)
	select {
	case err := <-errc:
		return fmt.Errorf("modelsim serve: %w", err)
	case <-ctx.Done():
	}
	return s.drain(hs, ln.Addr())
}

// startEngine runs the engine loop in its own goroutine; the returned function stops it and waits.
func (s *Server) startEngine() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.engine.Run(ctx, s.clock) }()
	return func() { cancel(); <-done }
}

// startPublisher runs the KV event publisher, when configured, in its own goroutine; the
// returned function stops it and waits.
func (s *Server) startPublisher(addr string) (stop func(), err error) {
	if s.cfg.KVEventsEndpoint == "" {
		return func() {}, nil
	}
	cfg := kvevents.DefaultConfig()
	cfg.Endpoint, cfg.Topic, cfg.BlockSize = s.cfg.KVEventsEndpoint, s.cfg.KVEventsTopic, profile.BlockSize
	if cfg.Topic == "" {
		cfg.Topic = kvevents.Topic(addr, s.cfg.Model)
	}
	pub, err := kvevents.New(cfg, s.engine, s.log)
	if err != nil {
		return nil, fmt.Errorf("modelsim kv events: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = pub.Run(ctx) }()
	return func() { cancel(); <-done }, nil
}

// drain shuts the HTTP server down gracefully: in-flight requests finish (the engine keeps
// running meanwhile) unless DrainTimeout passes first.
func (s *Server) drain(hs *http.Server, addr net.Addr) error {
	s.draining.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.DrainTimeout)
	defer cancel()
	err := hs.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		s.log.Warn("modelsim drain timed out; closing remaining connections", "timeout", s.cfg.DrainTimeout)
		err = hs.Close()
	}
	s.log.Info("modelsim stopped", "addr", addr.String())
	return err
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", echoTraceparent(s.handleGenerate(false)))
	mux.HandleFunc("POST /v1/chat/completions", echoTraceparent(s.handleGenerate(true)))
	mux.HandleFunc("POST /v1/embeddings", echoTraceparent(s.handleEmbeddings))
	mux.HandleFunc("POST /v1/responses", echoTraceparent(s.handleResponses))
	mux.HandleFunc("POST /tokenize", s.handleTokenize)
	s.registerEnginePaths(mux)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /health", s.handleHealth)
	mux.HandleFunc("GET /healthz", s.handleHealth)
	mux.HandleFunc("GET /readyz", s.handleReady)
	if s.gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{DisableCompression: true}))
	}
	return mux
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		http.Error(w, "draining", http.StatusServiceUnavailable)
		return
	}
	s.handleHealth(w, r)
}
