package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// shutdownGrace bounds how long in-flight streams may take to finish at shutdown.
const shutdownGrace = 30 * time.Second

// serve runs an HTTP server (HTTP/1.1 and h2c) on addr until ctx ends, then shuts it down,
// letting in-flight requests finish within shutdownGrace.
func serve(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", addr, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("http shutdown incomplete", "addr", addr, "err", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// mainHandler is the OpenAI endpoint plus health.
func (r *Router) mainHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/v1/", r.front.Handler())
	r.health(mux)
	return mux
}

func (r *Router) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg}))
	r.health(mux)
	return mux
}

func (r *Router) health(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, why := r.ready()
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, why)
	})
}

// adminToken returns the admin bearer token: read from cfg.AdminTokenFile (whitespace trimmed),
// or generated once into <data-dir>/admin-token with mode 0600 and reused afterwards.
func adminToken(cfg Config) (token, path string, err error) {
	if cfg.AdminTokenFile != "" {
		b, err := os.ReadFile(cfg.AdminTokenFile)
		if err != nil {
			return "", "", fmt.Errorf("--admin-token-file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", "", fmt.Errorf("--admin-token-file %s is empty", cfg.AdminTokenFile)
		}
		return tok, cfg.AdminTokenFile, nil
	}
	path = filepath.Join(cfg.DataDir, "admin-token")
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b)), path, nil
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", "", err
	}
	tok := hex.EncodeToString(raw)
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return "", "", fmt.Errorf("--data-dir: %w", err)
	}
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", "", fmt.Errorf("admin token: %w", err)
	}
	return tok, path, nil
}
