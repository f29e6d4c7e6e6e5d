// Package etcdclient connects the router to etcd: the endpoints, TLS (the servers' certificates
// verified against a CA bundle, a client certificate for etcd's client-cert-auth) and etcd's
// username and password authentication, with a reconnect backoff short enough that admin writes
// work again within a second or two of etcd coming back.
//
// Certificates and keys are read from their files at every TLS handshake (etcd's transport
// package does this), so rotating them on disk needs no restart; the password is read once, at
// start.
package etcdclient

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/switchyard-dev/switchyard/global-router/internal/embedetcd"
)

// Config says how to reach etcd. The field comments name the router's flags that set them.
type Config struct {
	// Endpoints are the client URLs, all http:// or all https:// (--etcd-endpoints). Required.
	Endpoints []string
	// CAFile is a PEM bundle of the CAs that sign the etcd servers' certificates
	// (--etcd-ca-file); empty trusts the system's roots. https endpoints only.
	CAFile string
	// CertFile and KeyFile are the PEM client certificate and key presented to etcd, for its
	// --client-cert-auth (--etcd-cert-file, --etcd-key-file): both or neither, https endpoints
	// only.
	CertFile, KeyFile string
	// Username is the etcd user when etcd's authentication is on (--etcd-username); it needs
	// PasswordFile.
	Username string
	// PasswordFile holds Username's password (--etcd-password-file); one trailing newline is
	// ignored. A password is never taken on the command line, where other users of the machine
	// could read it.
	PasswordFile string
	// DialTimeout bounds the first connection and authentication. Default 5 s.
	DialTimeout time.Duration
}

// Validate reports the first invalid field, named as its flag.
func (c Config) Validate() error {
	if len(c.Endpoints) == 0 {
		return errors.New("--etcd-endpoints: no endpoint")
	}
	secure, err := schemes(c.Endpoints)
	if err != nil {
		return err
	}
	switch {
	case (c.CertFile == "") != (c.KeyFile == ""):
		return errors.New("--etcd-cert-file and --etcd-key-file must be given together")
	case !secure && (c.CAFile != "" || c.CertFile != ""):
		return errors.New(
			"--etcd-ca-file, --etcd-cert-file and --etcd-key-file need https endpoints: https:// --etcd-endpoints, or an embedded etcd with --embedded-etcd-cert-file",
		)
	case c.Username == "" && c.PasswordFile != "":
		return errors.New("--etcd-password-file needs --etcd-username")
	case c.Username != "" && c.PasswordFile == "":
		return errors.New("--etcd-username needs --etcd-password-file")
	case strings.Contains(c.Username, ":"):
		return fmt.Errorf("--etcd-username: %q must not contain ':'", c.Username)
	case c.DialTimeout < 0:
		return fmt.Errorf("dial timeout %v must not be negative", c.DialTimeout)
	}
	return nil
}

// schemes reports whether the endpoints are https (true) or http (false), and an error when
// they mix the two or one is not a URL of either scheme.
func schemes(endpoints []string) (bool, error) {
	var https, http int
	for _, ep := range endpoints {
		u, err := url.Parse(ep)
		if err != nil || u.Host == "" {
			return false, fmt.Errorf("--etcd-endpoints: %q is not of the form http(s)://host:port", ep)
		}
		switch u.Scheme {
		case "https":
			https++
		case "http":
			http++
		default:
			return false, fmt.Errorf("--etcd-endpoints: %q: scheme must be http or https", ep)
		}
	}
	if https > 0 && http > 0 {
		return false, errors.New("--etcd-endpoints: mixes http:// and https:// endpoints")
	}
	return https > 0, nil
}

// New validates cfg, reads the TLS files and the password, and returns a client. With a
// username it authenticates before returning, so a wrong password is an error here; a TLS
// mismatch with a server shows at the first request. log receives etcd's client logs at warning
// level and above.
func New(cfg Config, log *slog.Logger) (*clientv3.Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	ccfg := clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		Logger:      embedetcd.NewZapLogger(log, slog.LevelWarn),
		// grpc-go's default backoff grows to 2 minutes; this one stays at a second.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  100 * time.Millisecond,
				Multiplier: 1.6,
				Jitter:     0.2,
				MaxDelay:   time.Second,
			},
			MinConnectTimeout: 2 * time.Second,
		})},
	}
	if secure, _ := schemes(cfg.Endpoints); secure {
		tc, err := transport.TLSInfo{CertFile: cfg.CertFile, KeyFile: cfg.KeyFile, TrustedCAFile: cfg.CAFile}.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd client TLS: %w", err)
		}
		ccfg.TLS = tc
	}
	if cfg.Username != "" {
		pw, err := readPassword(cfg.PasswordFile)
		if err != nil {
			return nil, err
		}
		ccfg.Username, ccfg.Password = cfg.Username, pw
	}
	cli, err := clientv3.New(ccfg)
	if err != nil {
		return nil, fmt.Errorf("etcd client (%s): %w", strings.Join(cfg.Endpoints, ","), err)
	}
	return cli, nil
}

// readPassword reads a password file: its content less one trailing newline (\n or \r\n).
func readPassword(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--etcd-password-file: %w", err)
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if pw == "" {
		return "", fmt.Errorf("--etcd-password-file: %s is empty", path)
	}
	return pw, nil
}
