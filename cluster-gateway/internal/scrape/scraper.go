package scrape

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
)

// Source is the endpoint set the scraper follows; *datastore.Store implements it.
// Implementations must be safe for concurrent use.
type Source interface {
	// Endpoints returns the current endpoints (a snapshot the scraper does not modify).
	Endpoints() []*datastore.Endpoint
	// Subscribe returns a channel signalled after each change of the set, and a cancel function.
	Subscribe() (<-chan struct{}, func())
}

// Scraper keeps every endpoint's metrics and model list current. It runs one goroutine per
// endpoint, started and stopped as the endpoint set changes, over one shared keep-alive transport.
type Scraper struct {
	cfg      Config
	src      Source
	client   *http.Client
	logger   *slog.Logger
	metrics  *scrapeMetrics
	families catalog      // the metric families read, per engine
	interval atomic.Int64 // current per-pod interval, nanoseconds
}

// New returns a scraper of the endpoints in src. logger and reg may be nil.
func New(cfg Config, src Source, logger *slog.Logger, reg prometheus.Registerer) (*Scraper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Scraper{
		cfg:      cfg,
		src:      src,
		logger:   logger,
		metrics:  newScrapeMetrics(src, reg),
		families: cfg.Families.catalog(),
	}
	s.client = &http.Client{Transport: newTransport(cfg), Timeout: cfg.Timeout}
	s.setInterval(len(src.Endpoints()))
	return s, nil
}

// newTransport returns the shared transport: one reused connection per pod, no proxy, no
// compression (the bodies are small and decompressing costs more CPU than the bytes saved).
func newTransport(cfg Config) *http.Transport {
	t := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          0, // no global cap: one idle connection per pod, however many pods
		MaxIdleConnsPerHost:   1,
		MaxConnsPerHost:       2,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
		DisableCompression:    true,
		WriteBufferSize:       1 << 10, // requests are a few hundred bytes
	}
	if cfg.MetricsScheme == "https" {
		// #nosec G402 -- only when asked for (GIE's default): pods' serving certificates are
		// often self-signed, and the metrics are not secret.
		t.TLSClientConfig = &tls.Config{InsecureSkipVerify: cfg.MetricsInsecureSkipVerify, MinVersion: tls.VersionTLS12}
	}
	return t
}

// metricsURL is the URL of an endpoint's metrics page.
func (s *Scraper) metricsURL(ep *datastore.Endpoint) string {
	addr := ep.Address
	if s.cfg.MetricsPort != 0 {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			addr = net.JoinHostPort(host, strconv.Itoa(s.cfg.MetricsPort))
		}
	}
	return cmp.Or(s.cfg.MetricsScheme, "http") + "://" + addr + s.cfg.MetricsPath
}

// Interval is the current per-pod scrape interval.
func (s *Scraper) Interval() time.Duration { return time.Duration(s.interval.Load()) }

func (s *Scraper) setInterval(n int) {
	d := s.cfg.IntervalFor(n)
	s.interval.Store(int64(d))
	s.metrics.interval.Set(d.Seconds())
}

// Run scrapes until ctx is done, following changes of the endpoint set. It returns nil after
// every per-endpoint loop has stopped.
func (s *Scraper) Run(ctx context.Context) error {
	changes, cancel := s.src.Subscribe()
	defer cancel()
	loops := make(map[*datastore.Endpoint]context.CancelFunc)
	var wg sync.WaitGroup
	defer func() {
		for _, stop := range loops {
			stop()
		}
		wg.Wait()
		s.client.CloseIdleConnections()
	}()
	for {
		s.reconcile(ctx, loops, &wg)
		select {
		case <-ctx.Done():
			return nil
		case <-changes:
		}
	}
}

// reconcile starts a loop for each new endpoint and stops the loops of removed ones.
func (s *Scraper) reconcile(ctx context.Context, loops map[*datastore.Endpoint]context.CancelFunc, wg *sync.WaitGroup) {
	eps := s.src.Endpoints()
	s.setInterval(len(eps))
	current := make(map[*datastore.Endpoint]bool, len(eps))
	for _, ep := range eps {
		current[ep] = true
		if loops[ep] == nil {
			lctx, stop := context.WithCancel(ctx)
			loops[ep] = stop
			wg.Go(func() { s.loop(lctx, ep) })
		}
	}
	for ep, stop := range loops {
		if !current[ep] {
			stop()
			delete(loops, ep)
			s.metrics.forget(ep.Address)
		}
	}
}

// loop scrapes one endpoint until ctx is done. The first scrape happens after a random fraction
// of the interval, so a large fleet discovered at once is not scraped in one burst.
func (s *Scraper) loop(ctx context.Context, ep *datastore.Endpoint) {
	metricsURL := s.metricsURL(ep)
	modelsURL := "http://" + ep.Address + s.cfg.ModelsPath
	timer := time.NewTimer(time.Duration(rand.Int64N(int64(s.Interval()) + 1)))
	defer timer.Stop()
	var nextModels time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		s.scrapeMetrics(ctx, ep, metricsURL)
		if now := time.Now(); !now.Before(nextModels) {
			nextModels = now.Add(s.cfg.ModelsInterval)
			if !s.refreshModels(ctx, ep, modelsURL) {
				nextModels = now.Add(s.cfg.RetryModels)
			}
		}
		timer.Reset(s.jittered())
	}
}

// jittered returns the interval randomised by ±Jitter.
func (s *Scraper) jittered() time.Duration {
	d := float64(s.Interval())
	return time.Duration(d * (1 + s.cfg.Jitter*(2*rand.Float64()-1)))
}

// scrapeMetrics fetches and stores one /metrics page, or records the failure.
func (s *Scraper) scrapeMetrics(ctx context.Context, ep *datastore.Endpoint, url string) {
	start := time.Now()
	m, err := s.fetchMetrics(ctx, url, ep.Engine)
	if err != nil {
		s.failed(ctx, ep, kindMetrics, err)
		return
	}
	m.ScrapedAt = time.Now()
	if ep.ScrapeFailures() > 0 {
		s.logger.Info("scrape recovered", "endpoint", ep.Address)
	}
	ep.SetMetrics(m)
	s.metrics.duration.Observe(m.ScrapedAt.Sub(start).Seconds())
}

// failed records a failed scrape unless it failed because the loop is stopping.
func (s *Scraper) failed(ctx context.Context, ep *datastore.Endpoint, kind string, err error) {
	if ctx.Err() != nil {
		return
	}
	s.metrics.errors.WithLabelValues(ep.Address, kind).Inc()
	if kind == kindMetrics {
		ep.RecordScrapeFailure()
		if ep.ScrapeFailures() == 1 {
			s.logger.Warn("scrape failed", "endpoint", ep.Address, "err", err)
			return
		}
	}
	s.logger.Debug("scrape failed", "endpoint", ep.Address, "kind", kind, "err", err)
}

// fetchMetrics GETs url and parses the page.
func (s *Scraper) fetchMetrics(ctx context.Context, url string, engine datastore.Engine) (*datastore.Metrics, error) {
	body, err := s.get(ctx, url, "text/plain")
	if err != nil {
		return nil, err
	}
	defer closeBody(body)
	m, err := parse(body, s.families.familiesFor(engine))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return m, nil
}

// get issues a GET and returns the body of a 200 answer, limited to MaxBodyBytes.
func (s *Scraper) get(ctx context.Context, url, accept string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	req.Header.Set("Accept", accept)
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err // already names the URL
	}
	if resp.StatusCode != http.StatusOK {
		closeBody(resp.Body)
		return nil, fmt.Errorf("scrape %s: status %d", url, resp.StatusCode)
	}
	return &limitedBody{r: resp.Body, left: s.cfg.MaxBodyBytes}, nil
}

// closeBody drains a little of what is left, so the connection can be reused, and closes.
func closeBody(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, 64<<10)
	_ = body.Close()
}

// errBodyTooLarge is returned when a body exceeds MaxBodyBytes.
var errBodyTooLarge = errors.New("scrape: body too large")

// limitedBody fails reads past a byte budget instead of truncating silently.
type limitedBody struct {
	r    io.ReadCloser
	left int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limitedBody) Close() error { return l.r.Close() }
