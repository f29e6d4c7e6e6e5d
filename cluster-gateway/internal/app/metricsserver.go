package app

import (
	"context"
	"fmt"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serveMetrics serves /metrics (this process's registry), /healthz and /readyz, and with
// --enable-pprof Go's runtime profiles, until ctx ends.
func (g *Gateway) serveMetrics(ctx context.Context) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g.reg, promhttp.HandlerOpts{Registry: g.reg}))
	if g.cfg.EnablePprof {
		mountPprof(mux)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ctx.Err() != nil || !g.Ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	srv := newMetricsServer(mux, defaultMetricsLimits())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(g.metricsLn) }()
	select {
	case err := <-errc:
		return fmt.Errorf("metrics: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

// metricsLimits bound what one client (a scraper, a probe) can hold on the metrics port. Its
// answers are small and quick, so unlike the proxy the whole request and response are bounded.
type metricsLimits struct {
	// ReadHeaderTimeout bounds reading a request's headers. Default 5 s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request. Default 10 s.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response. Default 30 s.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request for this long. Default 2 min.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's header block (431 beyond). Default 16 KiB.
	MaxHeaderBytes int
}

// defaultMetricsLimits returns the defaults documented on metricsLimits.
func defaultMetricsLimits() metricsLimits {
	return metricsLimits{
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
	}
}

// newMetricsServer returns an HTTP/1.1 server for h within l.
func newMetricsServer(h http.Handler, l metricsLimits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

// mountPprof serves Go's runtime profiles under /debug/pprof/ (heap, goroutine, allocs, profile,
// trace...). A CPU profile or trace must end within the port's write timeout (30 s).
func mountPprof(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
