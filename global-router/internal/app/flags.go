package app

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/contract/flagenv"
	"github.com/switchyard-dev/switchyard/contract/memlimit"
)

// ErrHelp is returned by ParseFlags when --help was asked for (usage has been printed).
var ErrHelp = flag.ErrHelp

// usage is the help text of every Config field's flag, in the docs' words (backticks mark code;
// --help drops them). It is the field table flagenv.Bind completes the struct's tags with.
var usage = map[string]string{
	"region":    "the router's region (required); clusters in it are local",
	"node-name": "gossip node name",
	"listen":    "OpenAI-compatible endpoint (HTTP/1.1 and h2c, or TLS), `/healthz`, `/readyz`",
	"tls-cert-file": "PEM certificate that serves `--listen` over TLS (HTTP/2 by ALPN, and HTTP/1.1), with " +
		"`--tls-key-file`; read at every handshake, so a rotated certificate needs no restart. The metrics port stays " +
		"plain HTTP",
	"tls-key-file":       "PEM key of `--tls-cert-file`",
	"tls-client-ca-file": "PEM CAs whose client certificates `--listen` requires over TLS (mutual TLS)",
	"admin-listen":       "admin API: gRPC, gRPC-Web and Connect on one port",
	"metrics-listen":     "`/metrics`, `/healthz`, `/readyz`",
	"enable-pprof":       "also serve Go's runtime profiles (`net/http/pprof`) under `/debug/pprof/` on the metrics port",
	"dns-listen":         "address of the built-in DNS responder (off when empty; see dns.md)",
	"dns-config":         "the DNS responder's file (zone, name, routers per region); needed with `--dns-listen`",
	"dns-sync-config": "Route 53 sync file; turns on the leader-elected sync of the regional latency records with " +
		"drains (see dns.md)",
	"etcd-endpoints": "etcd client URLs, comma-separated; empty starts an embedded etcd in `--data-dir`",
	"data-dir":       "embedded etcd data and the generated admin token",
	"embedded-etcd-listen": "client address of the embedded etcd (used without `--etcd-endpoints`), so other routers " +
		"can share it; port 0 picks a free one",
	"embedded-etcd-cert-file": "PEM certificate the embedded etcd serves its clients with over TLS, with " +
		"`--embedded-etcd-key-file` (see config-store.md)",
	"embedded-etcd-key-file":       "PEM key of `--embedded-etcd-cert-file`",
	"embedded-etcd-client-ca-file": "PEM CAs whose client certificates the embedded etcd requires (client-cert-auth)",
	"etcd-ca-file": "PEM CAs that verify the etcd servers' certificates (https endpoints; empty: the " +
		"system roots)",
	"etcd-cert-file":     "PEM client certificate presented to etcd, with `--etcd-key-file`",
	"etcd-key-file":      "PEM key of `--etcd-cert-file`",
	"etcd-username":      "etcd user when etcd's authentication is on, with `--etcd-password-file`",
	"etcd-password-file": "file holding `--etcd-username`'s password",
	"gossip-bind":        "gossip address `host:port`",
	"gossip-advertise":   "gossip address peers use (empty: the bind address)",
	"gossip-join":        "gossip seed addresses, comma-separated",
	"gossip-key-file": "gossip keyring (required): base64 32-byte keys, one per line; the first sends, all " +
		"are accepted",
	"gossip-profile": "memberlist timings: `wan` (one pool across regions) or `lan` (a region's pool, with " +
		"`--gossip-aggregator` routers joining the pool of aggregators)",
	"gossip-aggregator": "make this router one of its region's aggregators: it also joins the pool of aggregators " +
		"(`--gossip-wan-bind`, `--gossip-wan-join`; WAN timings), publishes its region's clusters there as a region " +
		"digest and relays other regions' digests into its region's pool (see scale.md)",
	"gossip-wan-bind":      "an aggregator's address `host:port` in the pool of aggregators",
	"gossip-wan-advertise": "an aggregator's address peers in the pool of aggregators use (empty: the bind address)",
	"gossip-wan-join":      "seed addresses of the pool of aggregators (other regions' aggregators), comma-separated",
	"gossip-wan-key-file": "keyring of the pool of aggregators, as `--gossip-key-file` (empty: the same keyring " +
		"as the region's pool)",
	"region-signing-key-file": "an aggregator's Ed25519 region key (PEM PKCS #8 or base64 of the seed) that signs " +
		"its region digests; register its public key with `switchyardctl register-region` (empty: unsigned, " +
		"accepted only while nothing is registered); reloaded when the file changes",
	"admin-token-file": "admin bearer token file (empty: a token is generated into " +
		"`<data-dir>/admin-token`, mode 0600)",
	"admin-tls-cert-file": "PEM certificate that serves the admin API over TLS (HTTP/2 by ALPN), with " +
		"`--admin-tls-key-file` (see admin.md)",
	"admin-tls-key-file": "PEM key of `--admin-tls-cert-file`",
	"admin-tls-client-ca-file": "PEM CAs whose client certificates the admin API requires (mutual TLS, besides the " +
		"bearer token)",
	"capacity-map": "serve the capacity map, a live web page of regions, clusters, flows and routing decisions, " +
		"under `/map/` on the admin port (log in with the admin token; see operators.md)",
	"capacity-map-max-streams": "live event streams the capacity map keeps open at once (one per open map tab); " +
		"one more gets 503",
	"gateway-ca-file": "PEM CAs that verify `https://` gateway URLs when forwarding across regions (empty: " +
		"the system roots)",
	"gateway-cert-file": "PEM client certificate presented to `https://` gateways, with " +
		"`--gateway-key-file`; read at every handshake",
	"gateway-key-file": "PEM key of `--gateway-cert-file`",
	"require-cluster-identity": "accept capacity summaries only of registered clusters even while none is registered " +
		"(no compatibility mode; the Helm chart sets it); see gossip.md",
	"allow-cleartext-gateways": "accept `http://` gateway URLs in cluster registrations and summaries; otherwise, once " +
		"clusters are registered, only `https://` ones",
	"max-clock-skew": "summaries (and chunks) whose sequence or generation time is further ahead of this " +
		"router's clock are dropped",
	"max-body-bytes": "request body limit in bytes; larger bodies get 413",
	"max-inflight-body-bytes": "the in-flight body budget: request-body memory the OpenAI port may hold at once (bytes, " +
		"or `256MiB`, `1Gi`); a request that does not fit gets 503 `body_budget_exhausted` with `Retry-After: 1`. `auto`: " +
		"a quarter of the Go memory limit in force, or 256 MiB without one, never below `--max-body-bytes`",
	"memory-limit": "the Go runtime's soft memory limit: bytes with a unit (`1536MiB`), `auto` for 90% of the cgroup's " +
		"`/sys/fs/cgroup/memory.max` (none outside a memory-limited cgroup), or `none`; logged at start",
	"queue-wait": "how long a request waits for room before 429",
	"tenant-token-window": "the sliding window tenants' tokens per minute are counted over (the limit scaled to it); " +
		"see [tenant budgets](#tenant-budgets)",
	"max-attempts": "clusters tried per request (the retry budget)",
	"max-ejection-percent": "most clusters passive health may eject at once, in percent of the clusters with a fresh " +
		"summary (0..100; at least one of two or more; a lone cluster never, below 100; 0 turns ejection off)",
	"routing-mode": "`global`: local first, overflow anywhere; baselines Tier 2 is measured against: " +
		"`local-only` (never forward outside the region), `spillover` (local until over the overflow threshold, then the " +
		"nearest region by RTT only)",
	"policy-unavailable": "what a request gets while the routing policies are not loaded from etcd yet: `refuse` " +
		"answers 503 `policy_unavailable`; `local` routes it inside this router's region only, which violates a residency " +
		"rule that excludes this region",
	"simulated-rtt": "`region=duration,...` latency added to requests forwarded to a region (local stack only)",
	"log-format":    "log format: `text` or `json` (`log/slog`)",
	"otlp-endpoint": "OpenTelemetry collector the router's spans are exported to over OTLP: `host:port` or a URL " +
		"(`http://` without TLS); empty: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`, and with " +
		"neither tracing is off (see Tracing)",
	"otlp-protocol": "OTLP protocol: `grpc` (port 4317) or `http` (protobuf, port 4318); empty: " +
		"`OTEL_EXPORTER_OTLP_PROTOCOL`, else `grpc`",
	"otlp-insecure": "export spans without TLS to a `host:port` `--otlp-endpoint` (a URL's scheme says it itself)",
	"trace-sample-ratio": "share of new traces recorded, 0..1, by trace ID; a request with a `traceparent` is decided " +
		"by `--trace-remote-parent`",
	"trace-remote-parent": "how a client's `traceparent` is treated: `ignore` (the default) starts a new trace linked " +
		"to the client's span, so no client chooses which of its requests are recorded or their trace; `ratio` keeps " +
		"the client's trace but records the request with probability `--trace-sample-ratio`, drawn at random; " +
		"`respect` follows its sampled flag (only behind a trusted front that owns sampling)",
	"log-level": "log level: `debug`, `info`, `warn`, `error`",
	"config":    "file of flag values, one `name=value` a line; the command line and the environment win over it",
	"session-header": "request header that names the conversation for session affinity " +
		"(at most 256 bytes; longer is refused with 400): a session stays on the cluster that served it " +
		"last while that one has room; without it the body's `metadata.session_id`, else `user`; " +
		"`\"\"` reads the body only",
	"passthrough-paths": "engine paths forwarded (POST) to a cluster serving the request's model, routed on the " +
		"model alone: `PATH=json` (the body's `model`) or `PATH=multipart` (the `model` form field; the rest of the " +
		"body streams), comma-separated, `none` for none; any other path gets 404 (see " +
		"[Pass-through paths](#pass-through-paths))",
}

// command is the router's flags, bound to Config: each is read from the command line, then its
// environment variable SWITCHYARD_<FLAG>, then the --config file.
var command = flagenv.Command[Config]{
	Name:     "global-router",
	Synopsis: "--region=NAME --gossip-key-file=FILE [flags]",
	Defaults: DefaultConfig,
	Options:  (*Config).bindOptions,
	FileFlag: "config",
}

// bindOptions completes c's tags: the help texts, and the flags whose parse is not their
// field's type's.
func (c *Config) bindOptions() flagenv.BindOptions {
	return flagenv.BindOptions{Usage: usage, Values: map[string]flag.Value{
		"max-inflight-body-bytes": memlimit.SizeFlag{P: &c.MaxInflightBodyBytes},
		"simulated-rtt":           rttValue{&c.SimulatedRTT},
	}}
}

// Flags describes every flag, with its default, in the order of Config's fields.
func Flags() []flagenv.Flag {
	return command.Flags() // it panics if Config's tags and the usage table disagree: TestFlags checks them
}

// ParseFlags builds the router's Config from the command line, then the environment variable
// SWITCHYARD_<FLAG> (dashes as underscores) of each flag the command line leaves unset, then the
// --config file for those still unset, then DefaultConfig. It returns ErrHelp after printing
// usage for --help, and otherwise every invalid value, each naming its flag.
func ParseFlags(args []string, stderr io.Writer) (Config, error) {
	return parseFlags(args, os.Getenv, stderr)
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	cfg, _, err := command.Parse(args, getenv, stderr)
	if err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// rttValue is --simulated-rtt: region=duration,...; each setting replaces the map.
type rttValue struct{ m *map[string]time.Duration }

func (v rttValue) String() string {
	if v.m == nil {
		return ""
	}
	var items []string
	for _, region := range slices.Sorted(maps.Keys(*v.m)) {
		items = append(items, region+"="+(*v.m)[region].String())
	}
	return strings.Join(items, ",")
}

func (v rttValue) Set(s string) error {
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
	*v.m = m
	return nil
}
