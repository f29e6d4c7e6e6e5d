// Package app wires the global router: configuration from flags, environment and a --config
// file, the config store on etcd (embedded or external), the gossip node, the cluster table, the
// front door, the admin API and the metrics endpoint, run together until the context ends.
package app

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/memlimit"
	"github.com/switchyard-dev/switchyard/contract/openai"
	"github.com/switchyard-dev/switchyard/global-router/internal/capmap"
	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/etcdclient"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
	"github.com/switchyard-dev/switchyard/global-router/internal/tracing"
	"github.com/switchyard-dev/switchyard/gossip"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// Config is the router's bootstrap configuration. Routing policy is not here: it lives in etcd.
// Each field is one flag, named by its tag; usage holds each flag's help text, and
// DefaultConfig its default. --help and the flags table of docs/router.md are generated from
// them (flagenv.Bind), so they cannot drift.
type Config struct {
	// Region is the router's region (required).
	Region string `flag:"region"`
	// NodeName is the router's gossip node name. Default "router-<region>-<hostname>".
	NodeName string `flag:"node-name" default:"router-<region>-<hostname>"`
	// Listen is the OpenAI-compatible endpoint. Default ":8080".
	Listen string `flag:"listen"`
	// TLSCertFile and TLSKeyFile, both or neither, serve Listen over TLS (HTTP/2 by ALPN, and
	// HTTP/1.1) instead of plain HTTP/1.1 and h2c; TLSClientCAFile then also requires client
	// certificates signed by its CAs (mutual TLS). The certificate and key are read at every
	// handshake, so rotated certificates need no restart. Default: plain, TLS terminated in front.
	TLSCertFile     string `flag:"tls-cert-file"`
	TLSKeyFile      string `flag:"tls-key-file"`
	TLSClientCAFile string `flag:"tls-client-ca-file"`
	// AdminListen is the admin API (gRPC, gRPC-Web and Connect). Default ":9090".
	AdminListen string `flag:"admin-listen"`
	// MetricsListen serves /metrics, /healthz and /readyz. Default ":9100".
	MetricsListen string `flag:"metrics-listen"`
	// EnablePprof also serves Go's runtime profiles (net/http/pprof) under /debug/pprof/ on the
	// metrics port. Default false.
	EnablePprof bool `flag:"enable-pprof"`
	// DNSListen, when set, serves the built-in DNS responder configured by DNSConfig. Default off.
	DNSListen string `flag:"dns-listen"`
	// DNSConfig is the DNS responder's file (zone, regional name, routers' addresses per region).
	DNSConfig string `flag:"dns-config"`
	// DNSSyncConfig, when set, turns on the Route 53 sync (the etcd-elected leader reconciles the
	// regional latency records with drains). Default off.
	DNSSyncConfig string `flag:"dns-sync-config"`
	// EtcdEndpoints are the etcd client URLs; empty starts an embedded etcd in DataDir.
	EtcdEndpoints []string `flag:"etcd-endpoints"`
	// DataDir holds the embedded etcd's data and the generated admin token. Default "switchyard-data".
	DataDir string `flag:"data-dir"`
	// EmbeddedEtcdListen is the client address of the embedded etcd, so other routers can share it
	// (the local stack does). Default "127.0.0.1:0": a free loopback port.
	EmbeddedEtcdListen string `flag:"embedded-etcd-listen"`
	// EmbeddedEtcdCertFile and EmbeddedEtcdKeyFile, both or neither, make the embedded etcd serve
	// its clients over TLS (https://EmbeddedEtcdListen); EmbeddedEtcdClientCAFile then also
	// requires client certificates signed by its CAs. Default: plain http, for loopback.
	EmbeddedEtcdCertFile     string `flag:"embedded-etcd-cert-file"`
	EmbeddedEtcdKeyFile      string `flag:"embedded-etcd-key-file"`
	EmbeddedEtcdClientCAFile string `flag:"embedded-etcd-client-ca-file"`
	// EtcdCAFile verifies the etcd servers' certificates (https; empty: the system roots);
	// EtcdCertFile and EtcdKeyFile are the client certificate presented to etcd. They apply to
	// external etcd and to a TLS embedded one alike.
	EtcdCAFile   string `flag:"etcd-ca-file"`
	EtcdCertFile string `flag:"etcd-cert-file"`
	EtcdKeyFile  string `flag:"etcd-key-file"`
	// EtcdUsername and EtcdPasswordFile authenticate to etcd when its authentication is on.
	EtcdUsername     string `flag:"etcd-username"`
	EtcdPasswordFile string `flag:"etcd-password-file"`
	// GossipBind is the gossip address (host:port). Default ":7946".
	GossipBind string `flag:"gossip-bind"`
	// GossipAdvertise is the address peers use to reach this node; empty: the bind address.
	GossipAdvertise string `flag:"gossip-advertise"`
	// GossipJoin are seed nodes to join.
	GossipJoin []string `flag:"gossip-join"`
	// GossipKeyFile holds the gossip keyring (base64 32-byte keys, one per line). Required.
	GossipKeyFile string `flag:"gossip-key-file"`
	// GossipProfile selects memberlist timings: "wan" (default, one pool across regions) or "lan".
	GossipProfile string `flag:"gossip-profile"`
	// GossipAggregator makes the router one of its region's aggregators: it also joins the pool
	// of aggregators at GossipWANBind (seeds GossipWANJoin, keyring GossipWANKeyFile or else
	// GossipKeyFile, WAN timings), publishes its region's clusters there as a region digest
	// signed with RegionSigningKeyFile, and relays the other regions' digests into its region's
	// pool. Default false: one pool, no digests published.
	GossipAggregator     bool     `flag:"gossip-aggregator"`
	GossipWANBind        string   `flag:"gossip-wan-bind"`
	GossipWANAdvertise   string   `flag:"gossip-wan-advertise"`
	GossipWANJoin        []string `flag:"gossip-wan-join"`
	GossipWANKeyFile     string   `flag:"gossip-wan-key-file" default:"--gossip-key-file"`
	RegionSigningKeyFile string   `flag:"region-signing-key-file"`
	// AdminTokenFile holds the admin bearer token; empty generates one in DataDir.
	AdminTokenFile string `flag:"admin-token-file"`
	// AdminTLSCertFile and AdminTLSKeyFile, both or neither, serve the admin API over TLS (HTTP/2
	// by ALPN, and HTTP/1.1) instead of plain HTTP/1.1 and h2c; AdminTLSClientCAFile then also
	// requires client certificates signed by its CAs (mutual TLS, in addition to the bearer
	// token). The files are read at every handshake, so rotated certificates need no restart.
	AdminTLSCertFile     string `flag:"admin-tls-cert-file"`
	AdminTLSKeyFile      string `flag:"admin-tls-key-file"`
	AdminTLSClientCAFile string `flag:"admin-tls-client-ca-file"`
	// CapacityMap serves the capacity map, a live web page of the regions, clusters, flows and
	// routing decisions, under /map/ on the admin port (login with the admin token). Default true.
	CapacityMap bool `flag:"capacity-map"`
	// CapacityMapMaxStreams bounds the capacity map's live event streams open at once (one per
	// open map tab). Default 16.
	CapacityMapMaxStreams int `flag:"capacity-map-max-streams"`
	// GatewayCAFile verifies the certificates of https:// gateway URLs (forwarding across regions
	// through a TLS listener in front of the gateways); empty: the system roots.
	// GatewayCertFile and GatewayKeyFile, both or neither, are the client certificate the router
	// presents to them (for a listener that requires one). Read at every handshake.
	GatewayCAFile   string `flag:"gateway-ca-file"`
	GatewayCertFile string `flag:"gateway-cert-file"`
	GatewayKeyFile  string `flag:"gateway-key-file"`
	// RequireClusterIdentity refuses every capacity summary while no cluster is registered,
	// instead of accepting them unverified (compatibility mode). Default false; the Helm chart
	// sets it.
	RequireClusterIdentity bool `flag:"require-cluster-identity"`
	// AllowCleartextGateways lets registrations and summaries name http:// gateway URLs; otherwise
	// only https:// ones are accepted once clusters are registered. Default false.
	AllowCleartextGateways bool `flag:"allow-cleartext-gateways"`
	// MaxClockSkew is how far ahead of this router's clock a summary's sequence number and
	// generation time may be before the summary is dropped. Default 30 s.
	MaxClockSkew time.Duration `flag:"max-clock-skew"`
	// MaxBodyBytes bounds a request body. Default 32 MiB.
	MaxBodyBytes int64 `flag:"max-body-bytes"`
	// MaxInflightBodyBytes is the in-flight body budget: the request-body memory the OpenAI
	// port may hold at once, beyond which a request is answered 503 with Retry-After. 0
	// (--max-inflight-body-bytes=auto) is a quarter of the Go memory limit in force (see
	// MemoryLimit), or 256 MiB without one, and never less than MaxBodyBytes. Default auto.
	MaxInflightBodyBytes int64 `flag:"max-inflight-body-bytes"`
	// MemoryLimit is the Go runtime's soft memory limit (runtime/debug.SetMemoryLimit): bytes
	// with an optional suffix (e.g. 1536MiB), "auto" for 90% of the cgroup's memory.max (no limit
	// outside a memory-limited cgroup), or "none". Default "": GOMEMLIMIT when it is set, else
	// auto.
	MemoryLimit string `flag:"memory-limit" default:"GOMEMLIMIT, else auto"`
	// QueueWait bounds how long a request waits for room before 429. Default 2 s.
	QueueWait time.Duration `flag:"queue-wait"`
	// TenantTokenWindow is the sliding window tenants' tokens per minute are counted over
	// (scaled to it). Default 1 minute.
	TenantTokenWindow time.Duration `flag:"tenant-token-window"`
	// MaxAttempts bounds the clusters tried per request. Default 3.
	MaxAttempts int `flag:"max-attempts"`
	// MaxEjectionPercent caps the share of the clusters with a fresh summary that passive health
	// may eject at once (at least one of two or more; a lone cluster is never ejected below 100);
	// 0 turns ejection off. Default 50.
	MaxEjectionPercent int `flag:"max-ejection-percent"`
	// RoutingMode is "global" (default: local first, overflow to the best cluster anywhere),
	// "local-only" (never leaves the router's region) or "spillover" (local until the region's
	// clusters are over the overflow threshold, then the nearest region by round trip alone):
	// the last two are the baselines Tier 2 is measured against.
	RoutingMode string `flag:"routing-mode"`
	// PolicyUnavailable is what a request gets while the routing policies have not been loaded
	// from etcd yet (etcd unreachable since the router started): "refuse" (default) answers 503
	// policy_unavailable with Retry-After; "local" routes it to this router's region only, which
	// violates a residency rule that excludes this region. A model whose stored policy cannot be
	// read is refused either way.
	PolicyUnavailable string `flag:"policy-unavailable"`
	// SessionHeader names the request header that carries a session id for session affinity
	// (over the body's metadata.session_id or user); "" reads the body only. Default
	// "x-session-id".
	SessionHeader string `flag:"session-header"`
	// PassthroughPaths are the engine paths forwarded (POST) to a cluster serving the request's
	// model: PATH=json or PATH=multipart, comma-separated, "none" for none (see
	// openai.ParsePassthroughPaths). Default openai.DefaultPassthroughPaths, the gateways' default.
	PassthroughPaths string `flag:"passthrough-paths"`
	// SimulatedRTT adds latency to requests forwarded to a region (local stack). Default none.
	SimulatedRTT map[string]time.Duration `flag:"simulated-rtt"`
	// LogFormat is "text" or "json". Default "text".
	LogFormat string `flag:"log-format"`
	// LogLevel is debug, info, warn or error. Default "info".
	LogLevel string `flag:"log-level"`
	// OTLPEndpoint is the OpenTelemetry collector spans are exported to (host:port or URL);
	// empty: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT, and with
	// neither tracing is off. OTLPProtocol is grpc or http (empty: the OTEL_* protocol
	// variables, else grpc); OTLPInsecure exports without TLS to a host:port endpoint;
	// TraceSampleRatio is the share of new traces recorded; TraceRemoteParent says how a
	// caller's traceparent is treated: respect (its sampled flag decides), ratio (its trace is
	// kept, the ratio decides) or ignore (a new trace, linked to the caller's span). Defaults:
	// off, grpc, TLS, 1, ignore.
	OTLPEndpoint      string  `flag:"otlp-endpoint"`
	OTLPProtocol      string  `flag:"otlp-protocol" default:"OTEL_EXPORTER_OTLP_PROTOCOL, else grpc"`
	OTLPInsecure      bool    `flag:"otlp-insecure"`
	TraceSampleRatio  float64 `flag:"trace-sample-ratio"`
	TraceRemoteParent string  `flag:"trace-remote-parent"`
	// ConfigFile is a file of flag values, one name=value a line (flagenv's format); the command
	// line and the environment win over it. Default none.
	ConfigFile string `flag:"config"`
}

// Routing modes (--routing-mode).
const (
	// RoutingGlobal keeps requests local while the region has room and overflows the rest to the
	// cluster expected to answer first, anywhere.
	RoutingGlobal = "global"
	// RoutingLocalOnly never forwards outside the router's region.
	RoutingLocalOnly = "local-only"
	// RoutingSpillover keeps requests local until every local cluster is over the policy's
	// overflow threshold, then sends them to the nearest region by round trip only.
	RoutingSpillover = "spillover"
)

// RoutingModes lists the --routing-mode values.
func RoutingModes() []string { return []string{RoutingGlobal, RoutingLocalOnly, RoutingSpillover} }

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		Listen:                ":8080",
		AdminListen:           ":9090",
		CapacityMap:           true,
		CapacityMapMaxStreams: capmap.DefaultConfig().MaxStreams,
		MetricsListen:         ":9100",
		DataDir:               "switchyard-data",
		EmbeddedEtcdListen:    "127.0.0.1:0",
		GossipBind:            ":7946",
		GossipProfile:         "wan",
		GossipWANBind:         ":7947",
		MaxClockSkew:          30 * time.Second,
		MaxBodyBytes:          32 << 20,
		QueueWait:             2 * time.Second,
		TenantTokenWindow:     time.Minute,
		MaxAttempts:           3,
		MaxEjectionPercent:    clustertable.DefaultEjectionConfig().MaxEjectionPercent,
		RoutingMode:           RoutingGlobal,
		PolicyUnavailable:     frontdoor.PolicyUnavailableRefuse,
		SessionHeader:         contract.HeaderSessionID,
		PassthroughPaths:      openai.DefaultPassthroughPaths,
		LogFormat:             "text",
		LogLevel:              "info",
		TraceSampleRatio:      tracing.DefaultConfig().SampleRatio,
		TraceRemoteParent:     tracing.DefaultConfig().RemoteParent,
	}
}

// tracingConfig is the tracing configuration of the flags.
func (c *Config) tracingConfig() telemetry.Config {
	tc := tracing.DefaultConfig()
	tc.Endpoint, tc.Protocol, tc.Insecure, tc.SampleRatio, tc.RemoteParent =
		c.OTLPEndpoint, c.OTLPProtocol, c.OTLPInsecure, c.TraceSampleRatio, c.TraceRemoteParent
	tc.ServiceVersion, tc.Region = Version, c.Region
	return tc
}

// Validate reports every invalid field (errors.Join), each named as its flag.
func (c *Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Region) == "" {
		errs = append(errs, errors.New("--region is required"))
	}
	for _, l := range []struct{ flag, addr string }{{"--listen", c.Listen}, {"--admin-listen", c.AdminListen},
		{"--metrics-listen", c.MetricsListen}, {"--gossip-bind", c.GossipBind},
		{"--embedded-etcd-listen", c.EmbeddedEtcdListen}} {
		if _, _, err := net.SplitHostPort(l.addr); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", l.flag, err))
		}
	}
	if err := c.validateEtcd(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.validateTLS()...)
	if c.CapacityMapMaxStreams < 1 {
		errs = append(errs, fmt.Errorf("--capacity-map-max-streams=%d must be at least 1", c.CapacityMapMaxStreams))
	}
	if c.DNSListen != "" {
		if _, _, err := net.SplitHostPort(c.DNSListen); err != nil {
			errs = append(errs, fmt.Errorf("--dns-listen: %w", err))
		}
		if c.DNSConfig == "" {
			errs = append(errs, errors.New("--dns-config is required with --dns-listen"))
		}
	}
	errs = append(errs, c.validateValues()...)
	errs = append(errs, c.validateAggregator()...)
	if err := memlimit.Check(c.MemoryLimit); err != nil {
		errs = append(errs, fmt.Errorf("--memory-limit: %q: %w", c.MemoryLimit, err))
	}
	for _, region := range slices.Sorted(maps.Keys(c.SimulatedRTT)) {
		if d := c.SimulatedRTT[region]; region == "" || d < 0 {
			errs = append(errs, fmt.Errorf("--simulated-rtt: invalid entry %q=%v", region, d))
		}
	}
	return errors.Join(errs...)
}

// validateAggregator checks the flags of the pool of aggregators: only with --gossip-aggregator,
// and the region key when one is named.
func (c *Config) validateAggregator() []error {
	if !c.GossipAggregator {
		if len(c.GossipWANJoin) > 0 || c.GossipWANAdvertise != "" || c.GossipWANKeyFile != "" ||
			c.RegionSigningKeyFile != "" {
			return []error{errors.New("--gossip-wan-join, --gossip-wan-advertise, --gossip-wan-key-file and " +
				"--region-signing-key-file need --gossip-aggregator")}
		}
		return nil
	}
	var errs []error
	for _, l := range []struct{ flag, addr string }{{"--gossip-wan-bind", c.GossipWANBind},
		{"--gossip-wan-advertise", c.GossipWANAdvertise}} {
		if l.addr == "" && l.flag == "--gossip-wan-advertise" {
			continue
		}
		if _, _, err := net.SplitHostPort(l.addr); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", l.flag, err))
		}
	}
	if c.GossipWANBind == c.GossipBind {
		errs = append(errs, fmt.Errorf("--gossip-wan-bind %q is --gossip-bind's address: the pools need a port each",
			c.GossipWANBind))
	}
	if c.RegionSigningKeyFile != "" {
		if _, err := gossip.LoadSigningKeyFile(c.RegionSigningKeyFile); err != nil {
			errs = append(errs, fmt.Errorf("--region-signing-key-file: %w", err))
		}
	}
	return errs
}

// validateTLS checks that certificates come with their keys, and client CAs with both.
func (c *Config) validateTLS() []error {
	var errs []error
	add := func(bad bool, msg string) {
		if bad {
			errs = append(errs, errors.New(msg))
		}
	}
	add((c.TLSCertFile == "") != (c.TLSKeyFile == ""), "--tls-cert-file and --tls-key-file must be given together")
	add(c.TLSClientCAFile != "" && c.TLSCertFile == "", "--tls-client-ca-file needs --tls-cert-file and --tls-key-file")
	add(
		(c.AdminTLSCertFile == "") != (c.AdminTLSKeyFile == ""),
		"--admin-tls-cert-file and --admin-tls-key-file must be given together",
	)
	add(
		c.AdminTLSClientCAFile != "" && c.AdminTLSCertFile == "",
		"--admin-tls-client-ca-file needs --admin-tls-cert-file and --admin-tls-key-file",
	)
	add(
		(c.GatewayCertFile == "") != (c.GatewayKeyFile == ""),
		"--gateway-cert-file and --gateway-key-file must be given together",
	)
	return errs
}

// validateValues checks the flags with a range or a set of values.
func (c *Config) validateValues() []error {
	var errs []error
	add := func(bad bool, format string, args ...any) {
		if bad {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	add(c.GossipKeyFile == "", "--gossip-key-file is required: gossip is always encrypted")
	add(c.GossipProfile != "wan" && c.GossipProfile != "lan", "--gossip-profile: %q must be wan or lan", c.GossipProfile)
	add(len(c.EtcdEndpoints) == 0 && c.DataDir == "", "--data-dir is required when no --etcd-endpoints are given")
	add(c.MaxClockSkew <= 0, "--max-clock-skew: %v must be positive", c.MaxClockSkew)
	add(c.MaxBodyBytes < 1, "--max-body-bytes: %d must be >= 1", c.MaxBodyBytes)
	add(c.MaxInflightBodyBytes < 0, "--max-inflight-body-bytes: %d must not be negative", c.MaxInflightBodyBytes)
	add(c.MaxInflightBodyBytes > 0 && c.MaxInflightBodyBytes < c.MaxBodyBytes,
		"--max-inflight-body-bytes: %d must be at least --max-body-bytes (%d), or no body of the largest size could be read",
		c.MaxInflightBodyBytes, c.MaxBodyBytes)
	add(c.QueueWait < 0, "--queue-wait: %v must be >= 0", c.QueueWait)
	add(
		c.TenantTokenWindow < time.Second || c.TenantTokenWindow > time.Hour,
		"--tenant-token-window: %v must be within 1s..1h",
		c.TenantTokenWindow,
	)
	add(c.MaxAttempts < 1, "--max-attempts: %d must be >= 1", c.MaxAttempts)
	add(
		c.MaxEjectionPercent < 0 || c.MaxEjectionPercent > 100,
		"--max-ejection-percent: %d must be 0..100",
		c.MaxEjectionPercent,
	)
	add(!slices.Contains(RoutingModes(), c.RoutingMode),
		"--routing-mode: %q must be one of %s", c.RoutingMode, strings.Join(RoutingModes(), ", "))
	add(
		c.PolicyUnavailable != frontdoor.PolicyUnavailableRefuse && c.PolicyUnavailable != frontdoor.PolicyUnavailableLocal,
		"--policy-unavailable: %q must be %s or %s",
		c.PolicyUnavailable,
		frontdoor.PolicyUnavailableRefuse,
		frontdoor.PolicyUnavailableLocal,
	)
	add(!validHeaderName(c.SessionHeader), "--session-header: %q must be a lower-case header name (a-z, 0-9, '-')",
		c.SessionHeader)
	add(contract.IsReserved(c.SessionHeader), "--session-header: %q: x-switchyard-* and x-gateway-* names are reserved",
		c.SessionHeader)
	if _, err := openai.ParsePassthroughPaths(c.PassthroughPaths); err != nil {
		errs = append(errs, fmt.Errorf("--passthrough-paths: %w", err))
	}
	add(c.LogFormat != "text" && c.LogFormat != "json", "--log-format: %q must be text or json", c.LogFormat)
	if err := c.tracingConfig().Validate(); err != nil {
		errs = append(
			errs,
			fmt.Errorf("--otlp-endpoint, --otlp-protocol, --trace-sample-ratio, --trace-remote-parent: %w", err),
		)
	}
	return errs
}

// validateEtcd checks the etcd connection's flags: the embedded server's TLS files when etcd is
// embedded, and the client's (against the embedded server's scheme, or the external endpoints).
func (c *Config) validateEtcd() error {
	embedded := len(c.EtcdEndpoints) == 0
	serverTLS := c.EmbeddedEtcdCertFile != "" || c.EmbeddedEtcdKeyFile != "" || c.EmbeddedEtcdClientCAFile != ""
	switch {
	case !embedded && serverTLS:
		return errors.New(
			"--embedded-etcd-cert-file, --embedded-etcd-key-file and --embedded-etcd-client-ca-file apply to the embedded " +
				"etcd only, not with --etcd-endpoints",
		)
	case (c.EmbeddedEtcdCertFile == "") != (c.EmbeddedEtcdKeyFile == ""):
		return errors.New("--embedded-etcd-cert-file and --embedded-etcd-key-file must be given together")
	case c.EmbeddedEtcdClientCAFile != "" && c.EmbeddedEtcdCertFile == "":
		return errors.New("--embedded-etcd-client-ca-file needs --embedded-etcd-cert-file and --embedded-etcd-key-file")
	case c.EmbeddedEtcdClientCAFile != "" && c.EtcdCertFile == "":
		return errors.New(
			"--embedded-etcd-client-ca-file requires client certificates: give this router's with --etcd-cert-file and " +
				"--etcd-key-file",
		)
	}
	return c.etcdClient(nil).Validate()
}

// etcdClient returns the etcd client's configuration: endpoints (the embedded etcd's when
// endpoints is given and no --etcd-endpoints are), TLS files and credentials. Before the
// embedded etcd has started (endpoints nil) its URL is the configured listen address.
func (c *Config) etcdClient(endpoints []string) etcdclient.Config {
	if len(c.EtcdEndpoints) > 0 {
		endpoints = c.EtcdEndpoints
	} else if endpoints == nil {
		endpoints = []string{c.embeddedEtcdURL()}
	}
	return etcdclient.Config{Endpoints: endpoints, CAFile: c.EtcdCAFile, CertFile: c.EtcdCertFile, KeyFile: c.EtcdKeyFile,
		Username: c.EtcdUsername, PasswordFile: c.EtcdPasswordFile}
}

// embeddedEtcdURL is the embedded etcd's client URL: https when it has a certificate.
func (c *Config) embeddedEtcdURL() string {
	if c.EmbeddedEtcdCertFile != "" {
		return "https://" + c.EmbeddedEtcdListen
	}
	return "http://" + c.EmbeddedEtcdListen
}

// validHeaderName reports whether h is "" or a lower-case header name of letters, digits and '-'.
func validHeaderName(h string) bool {
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}
