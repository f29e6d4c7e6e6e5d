// Package dnsserver is the router's built-in DNS responder (--dns-listen), for clusters outside
// AWS and for the local stack. Over UDP and TCP it answers A (and AAAA) queries for the regional
// name with the router addresses of the nearest ready region: the client's own region when it is
// ready and not drained, else the ready region with the lowest configured RTT from it. The
// client's region comes from its source address (a CIDR mapping), else from the EDNS client
// subnet its resolver sent, else a default. Other names in the zone get NXDOMAIN, names outside
// it REFUSED; answers carry a short TTL so clients follow drains quickly.
package dnsserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
)

// Readiness tells whether a region can serve: the router supplies it from its cluster table (a
// region is ready when it has a fresh, undrained cluster). It must be safe for concurrent use.
type Readiness interface {
	RegionReady(region string) bool
}

// ReadinessFunc adapts a function to Readiness.
type ReadinessFunc func(region string) bool

// RegionReady calls f.
func (f ReadinessFunc) RegionReady(region string) bool { return f(region) }

// DrainView tells whether a region is drained (e.g. the config store's current View). It must be
// safe for concurrent use.
type DrainView interface {
	RegionDrained(region string) bool
}

// DrainFunc adapts a function to DrainView.
type DrainFunc func(region string) bool

// RegionDrained calls f.
func (f DrainFunc) RegionDrained(region string) bool { return f(region) }

// Server answers DNS queries. ServeDNS is safe for concurrent use.
type Server struct {
	cfg     Config
	zone    string // lowercase FQDN
	name    string // lowercase FQDN
	ttl     uint32
	clients []clientNet         // longest prefix first
	prefs   map[string][]string // region -> regions, nearest first
	ready   Readiness
	drains  DrainView
	logger  *slog.Logger
	metrics *metrics
}

var _ dns.Handler = (*Server)(nil)

// New returns a responder. drains may be nil (then only readiness counts). Its collectors are
// registered on reg (none when nil).
func New(
	cfg Config,
	ready Readiness,
	drains DrainView,
	logger *slog.Logger,
	reg prometheus.Registerer,
) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if ready == nil {
		return nil, errors.New("dnsserver: nil readiness")
	}
	if drains == nil {
		drains = DrainFunc(func(string) bool { return false })
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Server{
		cfg: cfg, zone: dns.Fqdn(strings.ToLower(cfg.Zone)), name: dns.Fqdn(strings.ToLower(cfg.name())),
		ttl: uint32(cfg.TTL / time.Second), clients: clientNets(cfg.ClientRegions), prefs: cfg.preferences(),
		ready: ready, drains: drains, logger: logger, metrics: m,
	}, nil
}

// Run listens on Config.Listen over UDP and TCP (one port for both; with port 0 the UDP port is
// reused for TCP) and serves until ctx is done. It returns nil when ctx is done.
func (s *Server) Run(ctx context.Context) error {
	if s.cfg.Listen == "" {
		return errors.New("dnsserver: Config.Listen is empty")
	}
	pc, err := net.ListenPacket("udp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("dnsserver: listen udp %s: %w", s.cfg.Listen, err)
	}
	host, _, _ := net.SplitHostPort(s.cfg.Listen)
	_, port, _ := net.SplitHostPort(pc.LocalAddr().String())
	l, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		_ = pc.Close()
		return fmt.Errorf("dnsserver: listen tcp %s: %w", s.cfg.Listen, err)
	}
	return s.Serve(ctx, pc, l)
}

// Serve answers on pc (UDP) and l (TCP) until ctx is done, then closes both. It returns nil when
// ctx is done.
func (s *Server) Serve(ctx context.Context, pc net.PacketConn, l net.Listener) error {
	s.logger.Info("dns responder listening", "udp", pc.LocalAddr().String(), "tcp", l.Addr().String(), "name", s.name)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return serveOne(gctx, limited(&dns.Server{PacketConn: pc, Handler: s})) })
	g.Go(func() error { return serveOne(gctx, limited(&dns.Server{Listener: l, Handler: s})) })
	return g.Wait()
}

// Connection limits of the responder (miekg/dns's defaults, stated so they are not lost).
const (
	// readTimeout bounds reading a query (a TCP client that sends nothing is cut off).
	readTimeout = 2 * time.Second
	// writeTimeout bounds writing an answer.
	writeTimeout = 2 * time.Second
	// tcpIdleTimeout closes a TCP connection with no query for this long.
	tcpIdleTimeout = 8 * time.Second
	// maxTCPQueries closes a TCP connection after this many queries.
	maxTCPQueries = 128
)

// limited sets srv's timeouts and per-connection query limit.
func limited(srv *dns.Server) *dns.Server {
	srv.ReadTimeout, srv.WriteTimeout, srv.MaxTCPQueries = readTimeout, writeTimeout, maxTCPQueries
	srv.IdleTimeout = func() time.Duration { return tcpIdleTimeout }
	return srv
}

// serveOne runs srv until ctx is done and shuts it down.
func serveOne(ctx context.Context, srv *dns.Server) error {
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	errc := make(chan error, 1)
	go func() { errc <- srv.ActivateAndServe() }()
	select {
	case err := <-errc:
		return fmt.Errorf("dnsserver: serve: %w", err)
	case <-ctx.Done():
	}
	select {
	case <-started:
	case err := <-errc:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.ShutdownContext(sctx); err != nil {
		return fmt.Errorf("dnsserver: shutdown: %w", err)
	}
	if err := <-errc; err != nil {
		return fmt.Errorf("dnsserver: serve: %w", err)
	}
	return nil
}

// ServeDNS answers one query.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	src := addrOf(w.RemoteAddr())
	resp := s.answer(req, src)
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		resp.Truncate(udpSize(req))
	}
	if err := w.WriteMsg(resp); err != nil {
		s.logger.Debug("dns write failed", "client", src.String(), "err", err)
	}
}

// addrOf returns the IP of a network address, unmapped; the zero Addr when there is none.
func addrOf(a net.Addr) netip.Addr {
	var ip net.IP
	switch a := a.(type) {
	case *net.UDPAddr:
		ip = a.IP
	case *net.TCPAddr:
		ip = a.IP
	}
	addr, _ := netip.AddrFromSlice(ip)
	return addr.Unmap()
}

// udpSize is the largest UDP response the client accepts.
func udpSize(req *dns.Msg) int {
	if opt := req.IsEdns0(); opt != nil && int(opt.UDPSize()) > dns.MinMsgSize {
		return int(opt.UDPSize())
	}
	return dns.MinMsgSize
}
