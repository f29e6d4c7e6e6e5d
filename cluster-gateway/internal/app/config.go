// Package app assembles the cluster-gateway binary: it reads flags (and SWITCHYARD_<FLAG>
// environment variables) into one Config, builds discovery, metrics scraping, the scheduler, flow
// control and both front doors (HTTP proxy and Envoy ext_proc) around one endpoint store, and runs
// them under an errgroup until the context ends.
package app

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/bbr"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/extproc"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/flowcontrol"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scheduling"
	"github.com/switchyard-dev/switchyard/contract/memlimit"
	"github.com/switchyard-dev/switchyard/gossip"
)

// Config is every setting of the gateway; flags bind to it.
type Config struct {
	// Cluster and Region name this gateway's cluster (response headers, gossip). Required.
	Cluster, Region string
	// Listen is the HTTP proxy address. Default ":8080".
	Listen string
	// TLSCertFile and TLSKeyFile, both or neither, serve Listen over TLS (HTTP/2 by ALPN, and
	// HTTP/1.1) for routers that reach the gateway across regions at an https:// advertise URL;
	// TLSClientCAFile then requires client certificates signed by its CAs (the routers'
	// --gateway-cert-file). The files are read at every handshake, so rotated certificates need no
	// restart. Default: plain HTTP/1.1 and h2c.
	TLSCertFile, TLSKeyFile, TLSClientCAFile string
	// ExtProcListen is the Envoy ext_proc gRPC address; empty disables it. Default ":9002".
	ExtProcListen string
	// SecureServing serves ExtProcListen over TLS, as GIE's endpoint picker does with the flag of
	// the same name, for gateways that reach the endpoint picker with TLS (they do not verify its
	// certificate unless configured to). CertPath is a directory holding tls.crt and tls.key (a
	// Kubernetes TLS Secret mounted), read at every handshake; without it a self-signed
	// certificate is made at start. Default false: HTTP/2 cleartext, as Envoy Gateway connects.
	SecureServing bool
	CertPath      string
	// MetricsListen serves /metrics, /healthz and /readyz. Default ":9090".
	MetricsListen string
	// EnablePprof also serves Go's runtime profiles (net/http/pprof) under /debug/pprof/ on the
	// metrics port. Default false.
	EnablePprof bool
	// Endpoints is a static "host:port,..." list; EndpointsFile a watched YAML list; PoolName and
	// PoolNamespace an InferencePool to follow (Kubeconfig, when set, instead of in-cluster
	// credentials). Exactly one source is required.
	Endpoints, EndpointsFile, PoolName, PoolNamespace, Kubeconfig string
	// ConfigFile is a GIE EndpointPickerConfig file; Profile a built-in profile used without it.
	// Default profile "default".
	ConfigFile, Profile string
	// Gossip settings (validated; the publisher uses them).
	GossipBind, GossipJoin, GossipKeyFile, AdvertiseURL string
	// SummarySigningKeyFile holds the cluster's Ed25519 signing key (PEM PKCS #8 or the base64 of
	// the 32-byte seed); every capacity summary is signed with it, and routers that have the
	// cluster registered accept only summaries its public key verifies. Re-read every 10 s.
	// Default: unsigned.
	SummarySigningKeyFile string
	// LogFormat is text or json; LogLevel debug, info, warn or error. Defaults text, info.
	LogFormat, LogLevel string
	// ScrapeInterval is the per-pod metrics scrape interval for small fleets. Default 50 ms.
	ScrapeInterval time.Duration
	// Staleness is the metrics age beyond which a pod is not counted for readiness. Default 2 s.
	Staleness time.Duration
	// MaxBodyBytes is the request body limit (413 beyond). Default 32 MiB.
	MaxBodyBytes int64
	// MaxInflightBodyBytes is the in-flight body budget: the request-body memory both front
	// doors may hold at once, beyond which a request is answered 503 with Retry-After. 0
	// (--max-inflight-body-bytes=auto) is a quarter of the Go memory limit in force (see
	// MemoryLimit), or 256 MiB without one, and never less than MaxBodyBytes. Default auto.
	MaxInflightBodyBytes int64
	// MemoryLimit is the Go runtime's soft memory limit (runtime/debug.SetMemoryLimit): bytes
	// with an optional suffix (e.g. 1536MiB), "auto" for 90% of the cgroup's memory.max (no limit
	// outside a memory-limited cgroup), or "none". Default "": GOMEMLIMIT when it is set, else
	// auto.
	MemoryLimit string
	// AdapterMap is "adapter=base,..." or a YAML file of adapter: base. Default empty.
	AdapterMap string
	// EndpointHeader adds x-switchyard-endpoint, the serving pod's name, to responses. Default
	// true. EndpointHeaderAddress shows the pod's ip:port there instead, for debugging (the
	// address is internal to the cluster). Default false.
	EndpointHeader, EndpointHeaderAddress bool
	// QueueLimit, QueueTTL and ObjectivePriorities configure flow control (defaults 1024, 10 s, "").
	QueueLimit          int
	QueueTTL            time.Duration
	ObjectivePriorities string
	// MinPriority and MaxPriority bound the priority bands: an x-switchyard-priority header
	// outside them (or not an integer) is answered 400, and every --objective-priorities value
	// must lie inside them. Defaults -10 and 10.
	MinPriority, MaxPriority int
	// MaxAttempts bounds the endpoints the HTTP proxy tries per request. Default 3.
	MaxAttempts int
	// MaxEjectionPercent caps the share of the pool's endpoints that passive health may eject at
	// once, as Envoy's max_ejection_percent (at least one of two or more; a lone endpoint is
	// never ejected below 100). 0 turns ejection off. Default 50.
	MaxEjectionPercent int
	// DrainTimeout bounds the wait for in-flight streams at shutdown. Default 30 s.
	DrainTimeout time.Duration
	// ExtProcBodyTimeout bounds the time from a request's headers to the end of its body on the
	// ext_proc server: past it the request is answered 408 and its body released (see
	// extproc.Config.BodyTimeout). Default 30 s; must be positive.
	ExtProcBodyTimeout time.Duration
}

// DefaultConfig returns the defaults documented on each field.
func DefaultConfig() Config {
	return Config{
		Listen:         ":8080",
		ExtProcListen:  ":9002",
		MetricsListen:  ":9090",
		PoolNamespace:  "default",
		Profile:        scheduling.ProfileDefault,
		LogFormat:      "text",
		LogLevel:       "info",
		ScrapeInterval: 50 * time.Millisecond,
		Staleness:      2 * time.Second,
		MaxBodyBytes:   bbr.DefaultConfig().MaxBodyBytes,
		EndpointHeader: true,
		QueueLimit:     flowcontrol.DefaultConfig().MaxQueue,
		QueueTTL:       flowcontrol.DefaultConfig().TTL,
		MinPriority:    flowcontrol.DefaultMinPriority,
		MaxPriority:    flowcontrol.DefaultMaxPriority,
		MaxAttempts:    3,
		DrainTimeout:   30 * time.Second,

		MaxEjectionPercent: datastore.DefaultMaxEjectionPercent,
		ExtProcBodyTimeout: extproc.DefaultBodyTimeout,
	}
}

// Validate returns an error naming the first invalid flag.
func (c Config) Validate() error {
	checks := []func() error{c.validateIdentity, c.validateListeners, c.validateDiscovery, c.validateScheduling,
		c.validateLimits, c.validateGossip, c.validateLogging}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (c Config) validateIdentity() error {
	if strings.TrimSpace(c.Cluster) == "" {
		return errors.New("--cluster is required")
	}
	if strings.TrimSpace(c.Region) == "" {
		return errors.New("--region is required")
	}
	return nil
}

func (c Config) validateListeners() error {
	switch {
	case (c.TLSCertFile == "") != (c.TLSKeyFile == ""):
		return errors.New("--tls-cert-file and --tls-key-file must be given together")
	case c.TLSClientCAFile != "" && c.TLSCertFile == "":
		return errors.New("--tls-client-ca-file needs --tls-cert-file and --tls-key-file")
	case c.CertPath != "" && !c.SecureServing:
		return errors.New("--cert-path needs --secure-serving")
	case c.SecureServing && c.ExtProcListen == "":
		return errors.New("--secure-serving needs --ext-proc-listen")
	}
	for _, l := range []struct{ flag, addr string }{{"--listen", c.Listen}, {"--metrics-listen", c.MetricsListen}, {"--ext-proc-listen", c.ExtProcListen}} {
		if l.addr == "" && l.flag == "--ext-proc-listen" {
			continue
		}
		if _, _, err := net.SplitHostPort(l.addr); err != nil {
			return fmt.Errorf("%s=%q: want host:port: %v", l.flag, l.addr, err)
		}
	}
	return nil
}

func (c Config) validateDiscovery() error {
	n := 0
	for _, set := range []bool{c.Endpoints != "", c.EndpointsFile != "", c.PoolName != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("exactly one of --endpoints, --endpoints-file or --pool-name is required")
	}
	if c.PoolName != "" && c.PoolNamespace == "" {
		return errors.New("--pool-namespace must not be empty with --pool-name")
	}
	return nil
}

func (c Config) validateScheduling() error {
	if c.ConfigFile != "" {
		if _, err := os.Stat(c.ConfigFile); err != nil {
			return fmt.Errorf("--config: %w", err)
		}
		return nil
	}
	return scheduling.Config{Profile: c.Profile}.Validate()
}

func (c Config) validateLimits() error {
	switch {
	case c.ScrapeInterval <= 0:
		return fmt.Errorf("--scrape-interval must be positive, got %v", c.ScrapeInterval)
	case c.Staleness <= 0:
		return fmt.Errorf("--staleness must be positive, got %v", c.Staleness)
	case c.MaxBodyBytes <= 0:
		return fmt.Errorf("--max-body-bytes must be positive, got %d", c.MaxBodyBytes)
	case c.MaxInflightBodyBytes < 0:
		return fmt.Errorf("--max-inflight-body-bytes must not be negative, got %d", c.MaxInflightBodyBytes)
	case c.MaxInflightBodyBytes > 0 && c.MaxInflightBodyBytes < c.MaxBodyBytes:
		return fmt.Errorf("--max-inflight-body-bytes=%d must be at least --max-body-bytes=%d, or no body of the largest size could be read",
			c.MaxInflightBodyBytes, c.MaxBodyBytes)
	case c.QueueLimit < 0:
		return fmt.Errorf("--queue-limit must not be negative, got %d", c.QueueLimit)
	case c.QueueTTL <= 0:
		return fmt.Errorf("--queue-ttl must be positive, got %v", c.QueueTTL)
	case c.MaxAttempts < 1:
		return fmt.Errorf("--max-attempts must be at least 1, got %d", c.MaxAttempts)
	case c.DrainTimeout <= 0:
		return fmt.Errorf("--drain-timeout must be positive, got %v", c.DrainTimeout)
	case c.ExtProcBodyTimeout <= 0:
		return fmt.Errorf("--ext-proc-body-timeout must be positive, got %v", c.ExtProcBodyTimeout)
	case c.MaxEjectionPercent < 0 || c.MaxEjectionPercent > 100:
		return fmt.Errorf("--max-ejection-percent must be 0..100, got %d", c.MaxEjectionPercent)
	}
	if err := memlimit.Check(c.MemoryLimit); err != nil {
		return fmt.Errorf("--memory-limit=%q: %w", c.MemoryLimit, err)
	}
	if _, err := bbr.ParseAdapterMap(c.AdapterMap); err != nil {
		return fmt.Errorf("--adapter-map: %w", err)
	}
	objectives, err := flowcontrol.ParseObjectivePriorities(c.ObjectivePriorities)
	if err != nil {
		return fmt.Errorf("--objective-priorities: %w", err)
	}
	return c.validatePriorities(objectives)
}

// validatePriorities checks the priority range and that every objective's priority is in it.
func (c Config) validatePriorities(objectives map[string]int) error {
	fc := flowcontrol.DefaultConfig()
	fc.MinPriority, fc.MaxPriority = c.MinPriority, c.MaxPriority
	switch {
	case c.MinPriority > c.MaxPriority:
		return fmt.Errorf("--min-priority=%d is above --max-priority=%d", c.MinPriority, c.MaxPriority)
	case fc.DefaultPriority < c.MinPriority || fc.DefaultPriority > c.MaxPriority:
		return fmt.Errorf("--min-priority=%d..--max-priority=%d must include the default priority %d", c.MinPriority, c.MaxPriority, fc.DefaultPriority)
	}
	if err := fc.ValidateObjectives(objectives); err != nil {
		return fmt.Errorf("--objective-priorities: %w (--min-priority=%d, --max-priority=%d)", err, c.MinPriority, c.MaxPriority)
	}
	return nil
}

func (c Config) validateGossip() error {
	if c.GossipJoin != "" && c.GossipBind == "" {
		return errors.New("--gossip-join needs --gossip-bind")
	}
	if c.GossipBind != "" {
		if _, _, err := net.SplitHostPort(c.GossipBind); err != nil {
			return fmt.Errorf("--gossip-bind=%q: want host:port: %v", c.GossipBind, err)
		}
	}
	for _, peer := range splitList(c.GossipJoin) {
		if _, _, err := net.SplitHostPort(peer); err != nil {
			return fmt.Errorf("--gossip-join: %q: want host:port: %v", peer, err)
		}
	}
	if c.AdvertiseURL != "" {
		u, err := url.Parse(c.AdvertiseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--advertise-url=%q: want an http(s) URL", c.AdvertiseURL)
		}
		if u.Scheme == "http" && c.TLSCertFile != "" {
			return fmt.Errorf("--advertise-url=%q: --listen serves TLS (--tls-cert-file): want an https URL", c.AdvertiseURL)
		}
	}
	if c.GossipKeyFile != "" {
		if _, err := ReadGossipKeys(c.GossipKeyFile); err != nil {
			return fmt.Errorf("--gossip-key-file: %w", err)
		}
	}
	if c.SummarySigningKeyFile != "" {
		if c.GossipBind == "" {
			return errors.New("--summary-signing-key-file needs --gossip-bind")
		}
		if _, err := gossip.LoadSigningKeyFile(c.SummarySigningKeyFile); err != nil {
			return fmt.Errorf("--summary-signing-key-file: %w", err)
		}
	}
	return nil
}

func (c Config) validateLogging() error {
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("--log-format=%q: want text or json", c.LogFormat)
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	return nil
}

// ReadGossipKeys reads a gossip key file: one base64-encoded 32-byte key per line (surrounding
// whitespace trimmed); the first is the sending key.
func ReadGossipKeys(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(k) != 32 {
			return nil, fmt.Errorf("line %d: want a base64-encoded 32-byte key", i+1)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no key in file")
	}
	return keys, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
