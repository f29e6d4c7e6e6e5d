// Package embedetcd runs an etcd member inside the process: the single-machine default of the
// global router when it is given no --etcd-endpoints, the shared etcd of the local stack, and the
// real etcd that tests run against. Members listen on loopback by default, pick free ports when
// asked for port 0, and log through the injected slog.Logger at warning level and above
// (NewZapLogger gives etcd's client the same treatment).
package embedetcd

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"
)

// Config configures one embedded etcd member.
type Config struct {
	// Name of the member, unique in its cluster. Default "switchyard".
	Name string
	// DataDir holds the member's write-ahead log and database. Required; created when missing.
	DataDir string
	// ClientURL is where the member serves clients: http, or https with ClientCertFile. Port 0
	// picks a free port. Default "http://127.0.0.1:0".
	ClientURL string
	// ClientCertFile and ClientKeyFile, both or neither, are the PEM certificate and key the
	// member serves clients with over TLS (ClientURL must then be https). They are read at every
	// handshake, so a rotated certificate needs no restart. Default: none, plain http.
	ClientCertFile, ClientKeyFile string
	// ClientCAFile, with ClientCertFile, requires every client to present a certificate signed by
	// one of the CAs in this PEM bundle (etcd's client-cert-auth). Default: none.
	ClientCAFile string
	// PeerURL is where the member talks to its peers, http only. Port 0 picks a free port.
	// Default "http://127.0.0.1:0".
	PeerURL string
	// InitialCluster lists every member of a new cluster as "name=peerURL,..."; empty starts a
	// single-member cluster. When set, ClientURL and PeerURL need explicit ports.
	InitialCluster string
	// ClusterToken distinguishes clusters that share peers' addresses. Default "switchyard".
	ClusterToken string
	// ReadyTimeout bounds how long Start waits for the member to serve. Default 60 s.
	ReadyTimeout time.Duration
	// HeartbeatInterval is raft's heartbeat tick. Default 100 ms (etcd's default).
	HeartbeatInterval time.Duration
	// ElectionTimeout is raft's election timeout, at least 5 heartbeats. Default 1 s (etcd's default).
	ElectionTimeout time.Duration
	// CompactionRetention keeps this much history for watchers to resume from; older revisions are
	// compacted periodically. Default 1 h; 0 disables compaction.
	CompactionRetention time.Duration
	// LogLevel is the lowest etcd log level passed to the logger. Default slog.LevelWarn.
	LogLevel slog.Level
	// UnsafeNoFsync skips fsync: faster, loses data on a machine crash. Tests only. Default false.
	UnsafeNoFsync bool
}

// DefaultConfig returns the defaults for a single-member etcd in dataDir on loopback free ports.
func DefaultConfig(dataDir string) Config {
	return Config{
		Name:                "switchyard",
		DataDir:             dataDir,
		ClientURL:           "http://127.0.0.1:0",
		PeerURL:             "http://127.0.0.1:0",
		ClusterToken:        "switchyard",
		ReadyTimeout:        60 * time.Second,
		HeartbeatInterval:   100 * time.Millisecond,
		ElectionTimeout:     time.Second,
		CompactionRetention: time.Hour,
		LogLevel:            slog.LevelWarn,
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Name == "":
		return errors.New("embedetcd: Name is empty")
	case c.DataDir == "":
		return errors.New("embedetcd: DataDir is empty")
	case c.ReadyTimeout <= 0:
		return errors.New("embedetcd: ReadyTimeout must be positive")
	case c.HeartbeatInterval < time.Millisecond:
		return errors.New("embedetcd: HeartbeatInterval must be at least 1ms")
	case c.ElectionTimeout < 5*c.HeartbeatInterval:
		return errors.New("embedetcd: ElectionTimeout must be at least 5 heartbeat intervals")
	case c.CompactionRetention < 0:
		return errors.New("embedetcd: CompactionRetention must not be negative")
	}
	switch {
	case (c.ClientCertFile == "") != (c.ClientKeyFile == ""):
		return errors.New("embedetcd: ClientCertFile and ClientKeyFile must be set together")
	case c.ClientCAFile != "" && c.ClientCertFile == "":
		return errors.New("embedetcd: ClientCAFile needs ClientCertFile and ClientKeyFile")
	}
	if u, err := url.Parse(c.ClientURL); err == nil && (u.Scheme == "https") != (c.ClientCertFile != "") {
		return fmt.Errorf("embedetcd: ClientURL %q: https if and only if ClientCertFile is set", c.ClientURL)
	}
	for _, f := range []struct{ name, raw string }{{"ClientURL", c.ClientURL}, {"PeerURL", c.PeerURL}} {
		u, err := parseURL(f.raw, f.name == "ClientURL")
		if err != nil {
			return fmt.Errorf("embedetcd: %s: %w", f.name, err)
		}
		if c.InitialCluster != "" && u.Port() == "0" {
			return fmt.Errorf("embedetcd: %s needs an explicit port when InitialCluster is set", f.name)
		}
	}
	return nil
}

// parseURL accepts http://host:port (or https://host:port when https is true) with nothing else.
func parseURL(raw string, https bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	scheme := u.Scheme == "http" || (https && u.Scheme == "https")
	if !scheme || u.Hostname() == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") {
		form := "http://host:port"
		if https {
			form = "http(s)://host:port"
		}
		return nil, fmt.Errorf("%q is not of the form %s", raw, form)
	}
	return u, nil
}
