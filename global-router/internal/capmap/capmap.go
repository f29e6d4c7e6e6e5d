// Package capmap serves the capacity map: a read-only web page on the router's admin port that
// shows every region and its clusters (free KV cache, queue depth, ready pods, round trip from
// this router, drains and ejections), the flows of requests from this router to each region,
// and the router's last routing decisions, updated live over server-sent events.
//
// The page uses the admin API's bearer token, presented once: a login form posts it, and a
// valid token opens a server-side session named by an HttpOnly, SameSite=Strict cookie (Secure
// over TLS); the token never appears in a URL. A session ends when it expires, at logout, or
// as soon as its token is no longer accepted (rotated out of the token file). Every page, asset
// and event stream is served with a strict Content-Security-Policy (no inline script, nothing
// from another origin); the login and logout POSTs are refused from another origin.
//
// The figures are the ones the router already computes: the admin API's cluster table, the
// cluster table's region capacity (the switchyard_router_region_* metrics), and the front
// door's outcomes, kept by a Recorder (a bounded ring of decisions and per-region answer
// counts). Event streams are bounded: at most MaxStreams at once (counted), one message per
// Interval per stream, every write under a WriteTimeout deadline, and a MaxStreamDuration,
// so a slow or stuck browser cannot pin memory or a goroutine.
package capmap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
)

// Prefix is the path the capacity map is served under on the admin port.
const Prefix = "/map/"

// Clusters returns the admin API's cluster table (every cluster, ordered by region then name).
// *admin.Server implements it. It must be safe for concurrent use.
type Clusters interface {
	ClusterTable() []*adminv1.Cluster
}

// Regions returns the regions' capacity as the region capacity metrics export it.
// *clustertable.Table implements it. It must be safe for concurrent use.
type Regions interface {
	RegionCapacity() []clustertable.RegionCapacity
}

// Tokens checks an admin bearer token. *admin.Server implements it. It must be safe for
// concurrent use.
type Tokens interface {
	ValidToken(token string) bool
}

// Deps are what the map reads. Every field is required.
type Deps struct {
	Clusters Clusters
	Regions  Regions
	Tokens   Tokens
	// Outcomes is the recorder the front door reports its requests' outcomes to.
	Outcomes *Recorder
}

// Config tunes the capacity map.
type Config struct {
	// Region is the router's region. Required.
	Region string
	// Interval is the time between two messages of an event stream, and how long a snapshot is
	// reused. Default 1 s.
	Interval time.Duration
	// MaxStreams bounds the event streams open at once; one more is answered 503. Default 16.
	MaxStreams int
	// WriteTimeout bounds each write of an event stream; a browser that does not read in time
	// loses its stream. Default 5 s.
	WriteTimeout time.Duration
	// MaxStreamDuration ends an event stream after this long (the browser reconnects, and its
	// session is checked again). Default 10 min.
	MaxStreamDuration time.Duration
	// SessionTTL is how long a login lasts. Default 12 h.
	SessionTTL time.Duration
	// MaxSessions bounds the sessions kept; past it the one that expires first is dropped.
	// Default 256.
	MaxSessions int
	// LoginRate and LoginBurst bound login attempts, all clients together, per second; beyond
	// them a login is answered 429. Default 5 per second, bursts of 10.
	LoginRate  float64
	LoginBurst int
	// FlowWindow is the window the flows' rates are measured over. Default 10 s.
	FlowWindow time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// DefaultConfig returns the defaults documented on Config, with no region.
func DefaultConfig() Config {
	return Config{
		Interval:          time.Second,
		MaxStreams:        16,
		WriteTimeout:      5 * time.Second,
		MaxStreamDuration: 10 * time.Minute,
		SessionTTL:        12 * time.Hour,
		MaxSessions:       256,
		LoginRate:         5,
		LoginBurst:        10,
		FlowWindow:        10 * time.Second,
		Now:               time.Now,
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Region == "":
		return errors.New("capmap: Region is empty")
	case c.Interval <= 0:
		return fmt.Errorf("capmap: Interval %v must be positive", c.Interval)
	case c.MaxStreams <= 0:
		return fmt.Errorf("capmap: MaxStreams %d must be positive", c.MaxStreams)
	case c.WriteTimeout <= 0:
		return fmt.Errorf("capmap: WriteTimeout %v must be positive", c.WriteTimeout)
	case c.MaxStreamDuration < c.Interval:
		return fmt.Errorf("capmap: MaxStreamDuration %v must be at least Interval", c.MaxStreamDuration)
	case c.SessionTTL <= 0:
		return fmt.Errorf("capmap: SessionTTL %v must be positive", c.SessionTTL)
	case c.MaxSessions <= 0:
		return fmt.Errorf("capmap: MaxSessions %d must be positive", c.MaxSessions)
	case c.LoginRate <= 0 || c.LoginBurst <= 0:
		return fmt.Errorf("capmap: LoginRate %v and LoginBurst %d must be positive", c.LoginRate, c.LoginBurst)
	case c.FlowWindow <= 0:
		return fmt.Errorf("capmap: FlowWindow %v must be positive", c.FlowWindow)
	case c.Now == nil:
		return errors.New("capmap: Now is nil")
	}
	return nil
}

func (d Deps) validate() error {
	switch {
	case d.Clusters == nil:
		return errors.New("capmap: Deps.Clusters is nil")
	case d.Regions == nil:
		return errors.New("capmap: Deps.Regions is nil")
	case d.Tokens == nil:
		return errors.New("capmap: Deps.Tokens is nil")
	case d.Outcomes == nil:
		return errors.New("capmap: Deps.Outcomes is nil")
	}
	return nil
}

// Server serves the capacity map. It is safe for concurrent use.
type Server struct {
	cfg      Config
	deps     Deps
	log      *slog.Logger
	metrics  *metrics
	sessions *sessions
	logins   *bucket
	snaps    *snapshots
	// slots holds one token per open event stream.
	slots chan struct{}
	// done is closed when Run's context ends: every event stream then ends.
	done chan struct{}
}

// New returns the capacity map over deps. Its collectors are registered on reg (none when reg
// is nil); log may be nil (nothing is logged).
func New(cfg Config, deps Deps, log *slog.Logger, reg prometheus.Registerer) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := deps.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:      cfg,
		deps:     deps,
		log:      log,
		sessions: newSessions(cfg.MaxSessions, cfg.SessionTTL, cfg.Now),
		logins:   newBucket(cfg.LoginRate, cfg.LoginBurst, cfg.Now),
		slots:    make(chan struct{}, cfg.MaxStreams),
		done:     make(chan struct{}),
	}
	s.snaps = &snapshots{s: s}
	m, err := newMetrics(reg, s)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	return s, nil
}

// Run waits for ctx to end, then ends every event stream (so the admin port's shutdown does not
// wait for browsers) and returns nil.
func (s *Server) Run(ctx context.Context) error {
	<-ctx.Done()
	close(s.done)
	return nil
}

// Handler returns the map's HTTP handler, for the paths under Prefix (and Prefix without its
// slash, redirected).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /map", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
	})
	mux.HandleFunc("GET /map/{$}", s.servePage)
	mux.HandleFunc("GET /map/login", s.serveLoginForm)
	mux.HandleFunc("POST /map/login", s.serveLogin)
	mux.HandleFunc("POST /map/logout", s.serveLogout)
	mux.HandleFunc("GET /map/snapshot", s.serveSnapshot)
	mux.HandleFunc("GET /map/events", s.serveEvents)
	mux.HandleFunc("GET /map/assets/{name}", serveAsset)
	return secureHeaders(noRoute(mux, s.metrics))
}
