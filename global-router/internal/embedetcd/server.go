package embedetcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Server is a running embedded etcd member.
type Server struct {
	etcd      *embed.Etcd
	cfg       Config
	log       *slogCore
	closeOnce sync.Once
}

// Start starts a member and waits until it serves clients (for a member of a multi-member cluster:
// until the cluster has a quorum, so start the members concurrently). Ports given as 0 are
// replaced by free ones; Server.Config reports them. The caller ends the member with Run's
// context or Close.
func Start(ctx context.Context, cfg Config, logger *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var err error
	for range 3 {
		var resolved Config
		var picked bool
		resolved, picked, err = resolvePorts(cfg)
		if err != nil {
			return nil, err
		}
		var s *Server
		s, err = start(ctx, resolved, logger)
		if err == nil {
			return s, nil
		}
		if !picked || !IsAddrInUse(err) { // a picked port was taken meanwhile: pick again
			return nil, err
		}
	}
	return nil, err
}

func start(ctx context.Context, cfg Config, logger *slog.Logger) (*Server, error) {
	core := newSlogCore(logger, cfg.LogLevel)
	ec, err := embedConfig(cfg, core)
	if err != nil {
		return nil, err
	}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("embedetcd: start %s: %w", cfg.Name, err)
	}
	timer := time.NewTimer(cfg.ReadyTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
		return &Server{etcd: e, cfg: cfg, log: core}, nil
	case err = <-e.Err():
		err = fmt.Errorf("embedetcd: %s failed before ready: %w", cfg.Name, err)
	case <-timer.C:
		err = fmt.Errorf("embedetcd: %s not ready within %s", cfg.Name, cfg.ReadyTimeout)
	case <-ctx.Done():
		err = fmt.Errorf("embedetcd: start %s: %w", cfg.Name, ctx.Err())
	}
	core.muted.Store(true)
	e.Close()
	return nil, err
}

func embedConfig(cfg Config, core *slogCore) (*embed.Config, error) {
	cu, err := parseURL(cfg.ClientURL, true)
	if err != nil {
		return nil, fmt.Errorf("embedetcd: ClientURL: %w", err)
	}
	pu, err := parseURL(cfg.PeerURL, false)
	if err != nil {
		return nil, fmt.Errorf("embedetcd: PeerURL: %w", err)
	}
	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = cfg.DataDir
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	if cfg.ClientCertFile != "" {
		ec.ClientTLSInfo = transport.TLSInfo{CertFile: cfg.ClientCertFile, KeyFile: cfg.ClientKeyFile,
			TrustedCAFile: cfg.ClientCAFile, ClientCertAuth: cfg.ClientCAFile != ""}
	}
	ec.InitialCluster = cfg.InitialCluster
	if ec.InitialCluster == "" {
		ec.InitialCluster = ec.InitialClusterFromName(cfg.Name)
	}
	ec.InitialClusterToken = cfg.ClusterToken
	ec.TickMs = uint(cfg.HeartbeatInterval / time.Millisecond)
	ec.ElectionMs = uint(cfg.ElectionTimeout / time.Millisecond)
	if cfg.CompactionRetention > 0 {
		ec.AutoCompactionMode = embed.CompactorModePeriodic
		ec.AutoCompactionRetention = cfg.CompactionRetention.String()
	}
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	ec.EnableGRPCGateway = false
	ec.LogLevel = zapLevel(cfg.LogLevel).String()
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(core))
	return ec, nil
}

// resolvePorts replaces port 0 in the client and peer URLs with free loopback ports.
func resolvePorts(cfg Config) (Config, bool, error) {
	picked := false
	for _, raw := range []*string{&cfg.ClientURL, &cfg.PeerURL} {
		u, err := parseURL(*raw, true)
		if err != nil {
			return cfg, false, err
		}
		if u.Port() != "0" {
			continue
		}
		port, err := FreePort(u.Hostname())
		if err != nil {
			return cfg, false, err
		}
		u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(port))
		*raw = u.String()
		picked = true
	}
	return cfg, picked, nil
}

// FreePort returns a TCP port on host that was free a moment ago.
func FreePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("embedetcd: free port on %s: %w", host, err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// IsAddrInUse reports whether err is a failure to bind an address another process holds.
func IsAddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// Endpoints returns the member's client URLs, for clientv3.Config.Endpoints.
func (s *Server) Endpoints() []string { return []string{s.cfg.ClientURL} }

// Config returns the member's configuration with the ports it actually uses, so that a stopped
// member can be started again on the same data and addresses.
func (s *Server) Config() Config { return s.cfg }

// Run serves until ctx is done (then it closes the member and returns nil) or the member fails.
func (s *Server) Run(ctx context.Context) error {
	defer s.Close()
	select {
	case <-ctx.Done():
		return nil
	case err := <-s.etcd.Err():
		if err == nil {
			err = errors.New("stopped")
		}
		return fmt.Errorf("embedetcd: %s: %w", s.cfg.Name, err)
	case <-s.etcd.Server.StopNotify():
		return fmt.Errorf("embedetcd: %s: server stopped", s.cfg.Name)
	}
}

// Close stops the member and releases its ports and data directory. It is safe to call more than
// once and concurrently with Run.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.log.muted.Store(true)
		s.etcd.Close()
	})
}
