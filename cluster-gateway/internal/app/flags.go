package app

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/switchyard-dev/switchyard/contract/memlimit"
)

// EnvPrefix prefixes the environment variable of every flag: --listen is SWITCHYARD_LISTEN,
// --ext-proc-listen SWITCHYARD_EXT_PROC_LISTEN. Command-line flags win over the environment.
const EnvPrefix = "SWITCHYARD_"

// newFlagSet binds every flag to c.
func newFlagSet(c *Config, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("cluster-gateway", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.Cluster, "cluster", c.Cluster, "name of this cluster (required)")
	fs.StringVar(&c.Region, "region", c.Region, "region of this cluster (required)")
	fs.StringVar(&c.Listen, "listen", c.Listen, "HTTP proxy address (OpenAI API, /healthz, /readyz)")
	fs.StringVar(&c.ExtProcListen, "ext-proc-listen", c.ExtProcListen, "Envoy ext_proc gRPC address (empty disables)")
	fs.BoolVar(&c.SecureServing, "secure-serving", c.SecureServing, "serve --ext-proc-listen over TLS (GIE's flag)")
	fs.StringVar(&c.CertPath, "cert-path", c.CertPath, "directory with tls.crt and tls.key for --secure-serving (default: a self-signed certificate)")
	fs.StringVar(&c.MetricsListen, "metrics-listen", c.MetricsListen, "address of /metrics, /healthz and /readyz")
	fs.BoolVar(&c.EnablePprof, "enable-pprof", c.EnablePprof, "serve Go's runtime profiles under /debug/pprof/ on the metrics port")
	fs.StringVar(&c.Endpoints, "endpoints", c.Endpoints, "static model servers: host:port,...")
	fs.StringVar(&c.EndpointsFile, "endpoints-file", c.EndpointsFile, "YAML list of model servers (watched)")
	fs.StringVar(&c.PoolName, "pool-name", c.PoolName, "InferencePool to follow")
	fs.StringVar(&c.PoolNamespace, "pool-namespace", c.PoolNamespace, "namespace of the InferencePool")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "kubeconfig file (default: in-cluster credentials)")
	fs.StringVar(&c.ConfigFile, "config", c.ConfigFile, "GIE EndpointPickerConfig YAML file (replaces --profile)")
	fs.StringVar(&c.Profile, "profile", c.Profile, "built-in profile: default, gie-default, round-robin, least-request, random")
	fs.StringVar(&c.GossipBind, "gossip-bind", c.GossipBind, "gossip bind address host:port")
	fs.StringVar(&c.GossipJoin, "gossip-join", c.GossipJoin, "gossip peers to join: host:port,...")
	fs.StringVar(&c.GossipKeyFile, "gossip-key-file", c.GossipKeyFile, "file of base64 32-byte gossip keys, one per line")
	fs.StringVar(&c.AdvertiseURL, "advertise-url", c.AdvertiseURL, "URL routers use to reach this gateway")
	fs.StringVar(&c.SummarySigningKeyFile, "summary-signing-key-file", c.SummarySigningKeyFile, "Ed25519 key that signs the capacity summaries (PEM PKCS #8 or base64 of the 32-byte seed; re-read every 10 s)")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", c.TLSCertFile, "PEM certificate that serves --listen over TLS (with --tls-key-file)")
	fs.StringVar(&c.TLSKeyFile, "tls-key-file", c.TLSKeyFile, "PEM key of --tls-cert-file")
	fs.StringVar(&c.TLSClientCAFile, "tls-client-ca-file", c.TLSClientCAFile, "PEM CAs whose client certificates --listen requires over TLS")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "log format: text or json")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log level: debug, info, warn, error")
	fs.DurationVar(&c.ScrapeInterval, "scrape-interval", c.ScrapeInterval, "per-pod metrics scrape interval")
	fs.DurationVar(&c.Staleness, "staleness", c.Staleness, "metrics age beyond which a pod counts as stale")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", c.MaxBodyBytes, "request body limit in bytes (413 beyond)")
	fs.Var(memlimit.SizeFlag{P: &c.MaxInflightBodyBytes}, "max-inflight-body-bytes", "request-body memory both front doors may hold at once, e.g. 256MiB (503 beyond); auto: a quarter of the memory limit, or 256 MiB without one")
	fs.StringVar(&c.MemoryLimit, "memory-limit", c.MemoryLimit, "Go soft memory limit: bytes with a suffix (e.g. 1536MiB), auto (90% of the cgroup's memory.max) or none (default: GOMEMLIMIT when set, else auto)")
	fs.StringVar(&c.AdapterMap, "adapter-map", c.AdapterMap, "LoRA adapters pods load on demand: adapter=base,... or a YAML file")
	fs.BoolVar(&c.EndpointHeader, "endpoint-header", c.EndpointHeader, "add x-switchyard-endpoint (the serving pod's name) to responses")
	fs.BoolVar(&c.EndpointHeaderAddress, "endpoint-header-address", c.EndpointHeaderAddress, "debugging: show the pod's ip:port in x-switchyard-endpoint instead of its name")
	fs.IntVar(&c.QueueLimit, "queue-limit", c.QueueLimit, "most requests queued by flow control")
	fs.DurationVar(&c.QueueTTL, "queue-ttl", c.QueueTTL, "longest wait in the flow-control queue before 429")
	fs.StringVar(&c.ObjectivePriorities, "objective-priorities", c.ObjectivePriorities, "x-gateway-inference-objective to priority: name=int,...")
	fs.IntVar(&c.MinPriority, "min-priority", c.MinPriority, "lowest priority band: an x-switchyard-priority below it is answered 400")
	fs.IntVar(&c.MaxPriority, "max-priority", c.MaxPriority, "highest priority band: an x-switchyard-priority above it is answered 400")
	fs.IntVar(&c.MaxAttempts, "max-attempts", c.MaxAttempts, "endpoints tried per request before giving up")
	fs.IntVar(&c.MaxEjectionPercent, "max-ejection-percent", c.MaxEjectionPercent, "most endpoints passive health may eject at once, in percent of the pool (0..100; at least one of two or more)")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", c.DrainTimeout, "longest wait for in-flight streams at shutdown")
	fs.DurationVar(&c.ExtProcBodyTimeout, "ext-proc-body-timeout", c.ExtProcBodyTimeout, "longest time from a request's headers to the end of its body on ext_proc (408 beyond)")
	return fs
}

// EnvName is the environment variable of a flag.
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// ParseConfig builds the Config from defaults, then the environment (getenv), then args. It
// returns flag.ErrHelp after printing usage to out for --help, and a validation error otherwise.
func ParseConfig(args []string, getenv func(string) string, out io.Writer) (Config, error) {
	c := DefaultConfig()
	fs := newFlagSet(&c, out)
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: cluster-gateway --cluster=NAME --region=NAME (--endpoints=LIST | --endpoints-file=FILE | --pool-name=N) [flags]\n\n")
		fmt.Fprintf(out, "Every flag may also be set with the environment variable %s<FLAG> (e.g. %s).\n\n", EnvPrefix, EnvName("listen"))
		fs.PrintDefaults()
	}
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if v := getenv(EnvName(f.Name)); v != "" && envErr == nil {
			if err := fs.Set(f.Name, v); err != nil {
				envErr = fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, err)
			}
		}
	})
	if envErr != nil {
		return c, envErr
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return c, c.Validate()
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(s))
	return l, err
}

// NewLogger returns the logger the flags ask for, writing to w.
func NewLogger(c Config, w io.Writer) *slog.Logger {
	level, _ := parseLevel(c.LogLevel) // validated
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
