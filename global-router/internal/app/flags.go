package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/contract/memlimit"
)

// ErrHelp is returned by ParseFlags when --help was asked for (usage has been printed).
var ErrHelp = flag.ErrHelp

// ParseFlags binds the router's flags to a Config starting from DefaultConfig. Each flag may also
// come from the environment variable SWITCHYARD_<FLAG> (dashes as underscores); the command line
// wins.
func ParseFlags(args []string, stderr io.Writer) (Config, error) {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("global-router", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Region, "region", cfg.Region, "region of this router (required)")
	fs.StringVar(&cfg.NodeName, "node-name", cfg.NodeName, "gossip node name (default router-<region>-<hostname>)")
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "OpenAI-compatible endpoint address")
	fs.StringVar(&cfg.TLSCertFile, "tls-cert-file", cfg.TLSCertFile, "PEM certificate that serves --listen over TLS (with --tls-key-file)")
	fs.StringVar(&cfg.TLSKeyFile, "tls-key-file", cfg.TLSKeyFile, "PEM key of --tls-cert-file")
	fs.StringVar(&cfg.TLSClientCAFile, "tls-client-ca-file", cfg.TLSClientCAFile, "PEM CAs whose client certificates --listen requires over TLS (mutual TLS)")
	fs.StringVar(&cfg.AdminListen, "admin-listen", cfg.AdminListen, "admin API address (gRPC, gRPC-Web, Connect)")
	fs.StringVar(&cfg.MetricsListen, "metrics-listen", cfg.MetricsListen, "address of /metrics, /healthz and /readyz")
	fs.BoolVar(&cfg.EnablePprof, "enable-pprof", cfg.EnablePprof, "serve Go's runtime profiles under /debug/pprof/ on the metrics port")
	fs.StringVar(&cfg.DNSListen, "dns-listen", cfg.DNSListen, "address of the built-in DNS responder (off when empty)")
	fs.StringVar(&cfg.DNSConfig, "dns-config", cfg.DNSConfig, "DNS responder file (zone, name, routers per region); needed with --dns-listen")
	fs.StringVar(&cfg.DNSSyncConfig, "dns-sync-config", cfg.DNSSyncConfig, "Route 53 sync file; turns on the leader-elected record sync")
	fs.Func("etcd-endpoints", "comma-separated etcd client URLs (empty: embedded etcd in --data-dir)", listFlag(&cfg.EtcdEndpoints))
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory for the embedded etcd and the generated admin token")
	fs.StringVar(&cfg.EmbeddedEtcdListen, "embedded-etcd-listen", cfg.EmbeddedEtcdListen, "client address of the embedded etcd (used without --etcd-endpoints)")
	fs.StringVar(&cfg.EmbeddedEtcdCertFile, "embedded-etcd-cert-file", cfg.EmbeddedEtcdCertFile, "PEM certificate the embedded etcd serves clients with over TLS (with --embedded-etcd-key-file)")
	fs.StringVar(&cfg.EmbeddedEtcdKeyFile, "embedded-etcd-key-file", cfg.EmbeddedEtcdKeyFile, "PEM key of --embedded-etcd-cert-file")
	fs.StringVar(&cfg.EmbeddedEtcdClientCAFile, "embedded-etcd-client-ca-file", cfg.EmbeddedEtcdClientCAFile, "PEM CAs whose client certificates the embedded etcd requires (client-cert-auth)")
	fs.StringVar(&cfg.EtcdCAFile, "etcd-ca-file", cfg.EtcdCAFile, "PEM CAs that verify the etcd servers' certificates (https; default: the system roots)")
	fs.StringVar(&cfg.EtcdCertFile, "etcd-cert-file", cfg.EtcdCertFile, "PEM client certificate presented to etcd (with --etcd-key-file)")
	fs.StringVar(&cfg.EtcdKeyFile, "etcd-key-file", cfg.EtcdKeyFile, "PEM key of --etcd-cert-file")
	fs.StringVar(&cfg.EtcdUsername, "etcd-username", cfg.EtcdUsername, "etcd user when etcd's authentication is on (with --etcd-password-file)")
	fs.StringVar(&cfg.EtcdPasswordFile, "etcd-password-file", cfg.EtcdPasswordFile, "file holding --etcd-username's password")
	fs.StringVar(&cfg.GossipBind, "gossip-bind", cfg.GossipBind, "gossip address host:port")
	fs.StringVar(&cfg.GossipAdvertise, "gossip-advertise", cfg.GossipAdvertise, "gossip address peers use (default: the bind address)")
	fs.Func("gossip-join", "comma-separated gossip seed addresses", listFlag(&cfg.GossipJoin))
	fs.StringVar(&cfg.GossipKeyFile, "gossip-key-file", cfg.GossipKeyFile, "gossip keyring file: base64 32-byte keys, one per line (required)")
	fs.StringVar(&cfg.GossipProfile, "gossip-profile", cfg.GossipProfile, "gossip timings: wan or lan")
	fs.StringVar(&cfg.AdminTokenFile, "admin-token-file", cfg.AdminTokenFile, "admin bearer token file (default: generated in --data-dir)")
	fs.StringVar(&cfg.AdminTLSCertFile, "admin-tls-cert-file", cfg.AdminTLSCertFile, "PEM certificate that serves the admin API over TLS (with --admin-tls-key-file)")
	fs.StringVar(&cfg.AdminTLSKeyFile, "admin-tls-key-file", cfg.AdminTLSKeyFile, "PEM key of --admin-tls-cert-file")
	fs.StringVar(&cfg.AdminTLSClientCAFile, "admin-tls-client-ca-file", cfg.AdminTLSClientCAFile, "PEM CAs whose client certificates the admin API requires (mutual TLS)")
	fs.StringVar(&cfg.GatewayCAFile, "gateway-ca-file", cfg.GatewayCAFile, "PEM CAs that verify https:// gateway URLs (default: the system roots)")
	fs.StringVar(&cfg.GatewayCertFile, "gateway-cert-file", cfg.GatewayCertFile, "PEM client certificate presented to https:// gateways (with --gateway-key-file)")
	fs.StringVar(&cfg.GatewayKeyFile, "gateway-key-file", cfg.GatewayKeyFile, "PEM key of --gateway-cert-file")
	fs.BoolVar(&cfg.RequireClusterIdentity, "require-cluster-identity", cfg.RequireClusterIdentity, "refuse every capacity summary while no cluster is registered (no compatibility mode)")
	fs.BoolVar(&cfg.AllowCleartextGateways, "allow-cleartext-gateways", cfg.AllowCleartextGateways, "accept http:// gateway URLs in cluster registrations and summaries (default: https:// only)")
	fs.DurationVar(&cfg.MaxClockSkew, "max-clock-skew", cfg.MaxClockSkew, "how far ahead of this router's clock a summary's sequence and generation time may be")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", cfg.MaxBodyBytes, "largest request body accepted")
	fs.Var(memlimit.SizeFlag{P: &cfg.MaxInflightBodyBytes}, "max-inflight-body-bytes", "request-body memory the OpenAI port may hold at once, e.g. 256MiB (503 beyond); auto: a quarter of the memory limit, or 256 MiB without one")
	fs.StringVar(&cfg.MemoryLimit, "memory-limit", cfg.MemoryLimit, "Go soft memory limit: bytes with a suffix (e.g. 1536MiB), auto (90% of the cgroup's memory.max) or none (default: GOMEMLIMIT when set, else auto)")
	fs.DurationVar(&cfg.QueueWait, "queue-wait", cfg.QueueWait, "how long a request waits for room before 429")
	fs.IntVar(&cfg.MaxAttempts, "max-attempts", cfg.MaxAttempts, "clusters tried per request (retry budget)")
	fs.IntVar(&cfg.MaxEjectionPercent, "max-ejection-percent", cfg.MaxEjectionPercent, "most clusters passive health may eject at once, in percent of those with a fresh summary (0..100; at least one of two or more)")
	fs.StringVar(&cfg.RoutingMode, "routing-mode", cfg.RoutingMode, "global (overflow across regions) or local-only (baseline: never leave the region)")
	fs.StringVar(&cfg.PolicyUnavailable, "policy-unavailable", cfg.PolicyUnavailable, "while routing policies are not loaded from etcd: refuse (503) or local (route in this region only; violates residency rules that exclude it)")
	fs.Func("simulated-rtt", "region=duration,... latency added to forwarded requests (local stack)", rttFlag(&cfg.SimulatedRTT))
	fs.StringVar(&cfg.LogFormat, "log-format", cfg.LogFormat, "log format: text or json")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "log level: debug, info, warn, error")
	if err := applyEnv(fs); err != nil {
		return cfg, err
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return cfg, cfg.Validate()
}

func listFlag(dst *[]string) func(string) error {
	return func(s string) error {
		*dst = nil
		for _, v := range strings.Split(s, ",") {
			if v = strings.TrimSpace(v); v != "" {
				*dst = append(*dst, v)
			}
		}
		return nil
	}
}

func rttFlag(dst *map[string]time.Duration) func(string) error {
	return func(s string) error {
		m := map[string]time.Duration{}
		for _, kv := range strings.Split(s, ",") {
			if kv = strings.TrimSpace(kv); kv == "" {
				continue
			}
			region, dur, ok := strings.Cut(kv, "=")
			d, err := time.ParseDuration(dur)
			if !ok || err != nil || region == "" {
				return fmt.Errorf("want region=duration, got %q", kv)
			}
			m[region] = d
		}
		*dst = m
		return nil
	}
}

// applyEnv sets flags from SWITCHYARD_<FLAG> environment variables.
func applyEnv(fs *flag.FlagSet) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		key := "SWITCHYARD_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(key); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
			}
		}
	})
	return errors.Join(errs...)
}
