package app

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// shutdownGrace bounds how long in-flight streams may take to finish at shutdown.
const shutdownGrace = 30 * time.Second

// serve runs the metrics port's HTTP server (HTTP/1.1 and h2c, within metricsHTTPLimits) on
// addr until ctx ends, then drains it: new requests get 503 with Retry-After on the still open
// listener while in-flight requests finish (within shutdownGrace), and the server shuts down
// once they have.
func serve(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	return serveWith(ctx, addr, h, nil, metricsHTTPLimits(), log)
}

// serveTLS serves a streaming port (OpenAI, admin) as serve does, within defaultHTTPLimits,
// over TLS with tc (HTTP/2 by ALPN, and HTTP/1.1); a nil tc serves plain HTTP/1.1 and h2c.
func serveTLS(ctx context.Context, addr string, h http.Handler, tc *tls.Config, log *slog.Logger) error {
	return serveWith(ctx, addr, h, tc, defaultHTTPLimits(), log)
}

// serveWith is serveTLS within l.
func serveWith(ctx context.Context, addr string, h http.Handler, tc *tls.Config, l httpLimits, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	gate := &drainGate{}
	srv := newHTTPServer(gate.wrap(h), l)
	// The server's own errors (TLS handshakes refused, a handler's panic) go to the structured
	// log, not to the standard logger's plain text.
	srv.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	if tc != nil {
		srv.TLSConfig = tc
		srv.Protocols.SetUnencryptedHTTP2(false)
		srv.Protocols.SetHTTP2(true)
	}
	errc := make(chan error, 1)
	go func() {
		if tc != nil {
			errc <- srv.ServeTLS(ln, "", "")
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", addr, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	gate.drain(sctx)
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
	mux.Handle("/", r.front.Handler()) // the OpenAI routes, and a JSON 404 for any unknown path
	r.health(mux)
	return withBodyDeadline(mux, defaultHTTPLimits().BodyReadTimeout)
}

func (r *Router) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg}))
	if r.cfg.EnablePprof {
		mountPprof(mux)
	}
	r.health(mux)
	return mux
}

// mountPprof serves Go's runtime profiles under /debug/pprof/ (heap, goroutine, allocs, profile,
// trace...) for --enable-pprof.
func mountPprof(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
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

// adminToken returns the admin bearer tokens and the file they came from: cfg.AdminTokenFile
// (one token per line, whitespace trimmed; every one is accepted), or a token generated once
// into <data-dir>/admin-token with mode 0600 and reused afterwards.
func adminToken(cfg Config) (tokens []string, path string, err error) {
	if cfg.AdminTokenFile != "" {
		b, err := os.ReadFile(cfg.AdminTokenFile)
		if err != nil {
			return nil, "", fmt.Errorf("--admin-token-file: %w", err)
		}
		tokens, err := parseTokens(b)
		if err != nil {
			return nil, "", fmt.Errorf("--admin-token-file %s: %w", cfg.AdminTokenFile, err)
		}
		return tokens, cfg.AdminTokenFile, nil
	}
	path = adminTokenPath(cfg)
	if b, err := os.ReadFile(path); err == nil {
		if tokens, err := parseTokens(b); err == nil {
			return tokens, path, nil
		}
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, "", err
	}
	tok := hex.EncodeToString(raw)
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, "", fmt.Errorf("--data-dir: %w", err)
	}
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return nil, "", fmt.Errorf("admin token: %w", err)
	}
	return []string{tok}, path, nil
}

// adminTLS returns the admin API's TLS configuration, nil without --admin-tls-cert-file.
func (c *Config) adminTLS() (*tls.Config, error) {
	tc, err := serverTLS(c.AdminTLSCertFile, c.AdminTLSKeyFile, c.AdminTLSClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("admin TLS: %w", err)
	}
	return tc, nil
}

// listenTLS returns the TLS configuration of the OpenAI port (--listen), nil without
// --tls-cert-file.
func (c *Config) listenTLS() (*tls.Config, error) {
	tc, err := serverTLS(c.TLSCertFile, c.TLSKeyFile, c.TLSClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file: %w", err)
	}
	return tc, nil
}

// serverTLS returns a server's TLS configuration from a certificate and its key, requiring
// client certificates signed by the CAs of clientCAFile when it is given; nil when certFile is
// empty. The certificate and key are read at every handshake (etcd's transport package does
// this), so a rotated certificate takes effect without a restart.
func serverTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	if certFile == "" {
		return nil, nil
	}
	info := transport.TLSInfo{
		CertFile:       certFile,
		KeyFile:        keyFile,
		TrustedCAFile:  clientCAFile,
		ClientCertAuth: clientCAFile != "",
	}
	return info.ServerConfig()
}

// gatewayTLS returns the TLS configuration for https:// gateway URLs: the CAs of
// --gateway-ca-file (else the system roots) and the client certificate of --gateway-cert-file,
// read at every handshake. Nil when neither is given: Go's defaults.
func (c *Config) gatewayTLS() (*tls.Config, error) {
	if c.GatewayCAFile == "" && c.GatewayCertFile == "" {
		return nil, nil
	}
	info := transport.TLSInfo{CertFile: c.GatewayCertFile, KeyFile: c.GatewayKeyFile, TrustedCAFile: c.GatewayCAFile}
	tc, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("gateway TLS: %w", err)
	}
	return tc, nil
}
