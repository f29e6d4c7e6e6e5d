package app

import (
	"flag"
	"io"
	"log/slog"

	"github.com/switchyard-dev/switchyard/contract/flagenv"
	"github.com/switchyard-dev/switchyard/contract/memlimit"
)

// command is the gateway's flags, bound to Config: each is read from the command line, then its
// environment variable (--listen is SWITCHYARD_LISTEN, --ext-proc-listen
// SWITCHYARD_EXT_PROC_LISTEN), then the --flags-file. GIE's "--flag true" spelling of a bool
// flag is joined into one argument first.
var command = flagenv.Command[Config]{
	Name:     "cluster-gateway",
	Synopsis: "[--cluster=NAME] [--region=NAME] (--endpoints=LIST | --endpoints-file=FILE | --pool-name=N) [flags]",
	Defaults: DefaultConfig,
	Options:  (*Config).bindOptions,
	FileFlag: "flags-file",
	Args:     joinBoolValues,
}

// usage is the help text of every Config field's flag, in the docs' words (backticks mark code;
// --help drops them). It is the field table flagenv.Bind completes the struct's tags with.
var usage = map[string]string{
	"cluster": "name of this cluster: sent as `x-switchyard-cluster` and published to gossip; required " +
		"unless `--pool-name` is set, whose name it then defaults to",
	"region": "region of this cluster: sent as `x-switchyard-region` and published to gossip; required with " +
		"gossip (`--gossip-bind`), else optional (no `x-switchyard-region` without it)",
	"listen": "HTTP proxy address: OpenAI API, `/healthz`, `/readyz`",
	"tls-cert-file": "PEM certificate that serves `--listen` over TLS (HTTP/2 by ALPN, and HTTP/1.1), with " +
		"`--tls-key-file`, for routers that reach the gateway across regions at an `https://` `--advertise-url` (the " +
		"default advertised URL is then `https://`, and an `http://` one is refused at start); read at every handshake, so " +
		"a rotated certificate needs no restart",
	"tls-key-file": "PEM key of `--tls-cert-file`",
	"tls-client-ca-file": "PEM CAs whose client certificates `--listen` requires over TLS (the routers' " +
		"`--gateway-cert-file`)",
	"ext-proc-listen": "Envoy ext_proc gRPC server and gRPC health; empty disables it",
	"grpc-health-port": "port of the gRPC health server Kubernetes probes (GIE's services `inference-extension`, " +
		"`liveness`, `readiness`, and `\"\"` and the ext_proc service), in cleartext on the host of `--ext-proc-listen` " +
		"(of `--metrics-listen` without ext_proc); SERVING when ready as `/readyz` (`liveness`: while running), " +
		"NOT_SERVING while draining; 0 turns it off",
	"secure-serving": "serve `--ext-proc-listen` over TLS, as GIE's endpoint picker's flag of the same name does, for " +
		"gateways that reach their endpoint picker with TLS (they do not verify its certificate unless configured to); off " +
		"by default, unlike GIE's, as Envoy Gateway connects in HTTP/2 cleartext; the gRPC health on `--ext-proc-listen` " +
		"is then over TLS too, while `--grpc-health-port` stays cleartext for the kubelet's probes",
	"cert-path": "directory with `tls.crt` and `tls.key` for `--secure-serving` (a Kubernetes TLS Secret " +
		"mounted), read at every handshake; empty: a self-signed certificate made at start",
	"metrics-listen": "address of `/metrics` (Prometheus), `/healthz` and `/readyz`",
	"enable-pprof": "also serve Go's runtime profiles (`net/http/pprof`) under `/debug/pprof/` on the metrics " +
		"port; a CPU profile or trace must end within the port's 30 s write timeout",
	"endpoints": "static pods: `host:port` or `name=host:port` items, comma-separated (see endpoint names in " +
		"gateway-data.md)",
	"endpoints-file": "YAML list of pods, re-read when it changes",
	"pool-name":      "GIE `InferencePool` to follow, with its ready pods",
	"pool-namespace": "namespace of `--pool-name`; empty: the `NAMESPACE` environment variable (GIE's chart sets it " +
		"to the pod's namespace), else `default`",
	"kubeconfig": "kubeconfig file for `--pool-name` (empty: in-cluster credentials)",
	"role-label": "pod label giving an `--pool-name` pod's prefill/decode role (`prefill`, `decode`, `both`) to " +
		"the `pd` profile's filters (docs/scheduling.md)",
	"config": "GIE `EndpointPickerConfig` YAML file; replaces `--profile`",
	"profile": "built-in scheduling profile: `default`, `gie-default`, `gie-lora`, `pd` (prefill/decode " +
		"disaggregation), or a baseline: `round-robin`, `least-request`, `random`, `weighted-round-robin`, `p2c`, " +
		"`leastconn` (docs/scheduling.md)",
	"kv-events-endpoint": "ZeroMQ endpoint `tcp://HOST:PORT` where the gateway binds a SUB socket for the pods' KV " +
		"cache events (vLLM `--kv-events-config` with the `zmq` publisher connecting to it, topic `kv@<pod-ip>@<model>`); " +
		"needed by `precise-prefix-cache-scorer` (empty: off)",
	"flags-file":  "file of flag values, one `name=value` a line; the command line and the environment win over it",
	"gossip-bind": "gossip address `host:port` (empty: no gossip)",
	"gossip-join": "gossip peers to join: `host:port,...` (needs `--gossip-bind`)",
	"gossip-key-file": "gossip keyring: base64 32-byte keys, one per line; the first sends, all are accepted; " +
		"re-read every 10 s",
	"advertise-url": "URL routers use to reach this gateway (default: from `--listen`)",
	"replica-bind": "active-active replicas: the replica pool's address `host:port` (TCP and UDP), where this " +
		"gateway shares its in-flight requests per pod and its prefix routes with the other replicas of its cluster " +
		"(empty: off; see Active-active replicas)",
	"replica-join": "replica pool peers to join: `host:port,...`, e.g. a headless Service's DNS name, which " +
		"resolves to every replica (needs `--replica-bind`)",
	"replica-key-file": "replica pool keyring, the `--gossip-key-file` format; every packet is encrypted with it " +
		"(empty: unencrypted, for local tests only)",
	"replica-advertise": "address `host:port` peers dial, when not the bound one (default: the bound address, or " +
		"the host's private IP when bound to every interface)",
	"replica-interval": "how often the load report and the batched prefix routes are sent to the peers",
	"replica-max-age":  "age past which a peer's load report counts for nothing (the shared load's staleness bound)",
	"summary-signing-key-file": "the cluster's Ed25519 signing key (PEM `PRIVATE KEY`, PKCS #8, or the base64 of the " +
		"32-byte seed); every capacity summary is signed with it, and routers with registered clusters accept only " +
		"summaries a registered key verifies (see gossip.md); re-read every 10 s. Empty: summaries are unsigned",
	"log-format": "log format: `text` or `json` (`log/slog`)",
	"otlp-endpoint": "OpenTelemetry collector the gateway's spans are exported to over OTLP: `host:port` or a URL " +
		"(`http://` without TLS); empty: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`, and with " +
		"neither tracing is off (see Tracing)",
	"otlp-protocol": "OTLP protocol: `grpc` (port 4317) or `http` (protobuf, port 4318); empty: " +
		"`OTEL_EXPORTER_OTLP_PROTOCOL`, else `grpc`",
	"otlp-insecure": "export spans without TLS to a `host:port` `--otlp-endpoint` (a URL's scheme says it itself)",
	"trace-sample-ratio": "share of new traces recorded, 0..1, by trace ID; a request with a `traceparent` is decided " +
		"by `--trace-remote-parent`",
	"trace-remote-parent": "how a caller's `traceparent` is treated: `respect` follows its sampled flag (the " +
		"default: the gateway's callers are routers, Envoy and in-cluster clients); `ratio` keeps its trace but records " +
		"the request with probability `--trace-sample-ratio`, drawn at random; `ignore` starts a new trace linked to the " +
		"caller's span. Choose `ratio` or `ignore` when untrusted clients reach the gateway",
	"log-level":       "log level: `debug`, `info`, `warn`, `error`",
	"scrape-interval": "per-pod metrics scrape interval (grows with the pod count)",
	"staleness":       "metrics age beyond which a pod does not count towards readiness",
	"max-body-bytes":  "request body limit in bytes (32 MiB); larger bodies get 413",
	"max-inflight-body-bytes": "the in-flight body budget: request-body memory both front doors may hold at once " +
		"(bytes, or with a unit: `256MiB`, `1Gi`); beyond it a request gets 503 with `Retry-After`. `auto` is a quarter of " +
		"the Go memory limit in force, or 256 MiB without one, never below `--max-body-bytes`",
	"memory-limit": "the Go runtime's soft memory limit (`runtime/debug.SetMemoryLimit`): bytes with a unit " +
		"(`1536MiB`), `auto` for 90% of the cgroup's `/sys/fs/cgroup/memory.max` (none outside a memory-limited cgroup), " +
		"or `none`; logged at start",
	"adapter-map": "LoRA adapters pods load on demand: `adapter=base,...` or a YAML file of `adapter: base`",
	"passthrough-paths": "engine paths this pool forwards (POST) to a pod serving the request's model, scheduled on " +
		"the model alone: `PATH=json` (the body's `model`) or `PATH=multipart` (the `model` form field; the rest of the " +
		"body streams), comma-separated, `none` for none; any other path gets 404 (see " +
		"[Pass-through paths](#pass-through-paths))",
	"endpoint-header": "add `x-switchyard-endpoint` (the serving pod's name) to responses",
	"endpoint-header-address": "debugging: show the pod's `ip:port` in `x-switchyard-endpoint` instead of its name (the " +
		"address is internal to the cluster)",
	"queue-limit": "most requests held by flow control",
	"queue-ttl":   "longest wait in the flow-control queue before 429",
	"objective-priorities": "map `x-gateway-inference-objective` values to priorities: `critical=10,batch=-1`; each " +
		"must lie in `--min-priority`..`--max-priority`",
	"min-priority": "lowest priority band: an `x-switchyard-priority` below it, or not an integer, is " +
		"answered 400; the range must include 0, the default priority",
	"max-priority": "highest priority band: an `x-switchyard-priority` above it is answered 400",
	"max-attempts": "pods the HTTP proxy tries per request",
	"max-ejection-percent": "most pods passive health may eject at once, in percent of the pool (0..100; at least " +
		"one of two or more; a lone pod never, below 100; 0 turns ejection off)",
	"drain-timeout": "longest wait for in-flight streams at shutdown",
	"ext-proc-body-timeout": "longest time from a request's headers to the end of its body on ext_proc; past it the " +
		"request is answered 408 `request_timeout` and its body released",

	// GIE's endpoint-picker flags (docs/gateway.md, "GIE compatibility").
	"grpc-port": "GIE: sets `--ext-proc-listen` to `:PORT`; with `--ext-proc-listen` given too, their " +
		"ports must agree",
	"metrics-port": "GIE: sets `--metrics-listen` to `:PORT`; with `--metrics-listen` given too, their " +
		"ports must agree",
	"pool-group": "GIE: API group of `--pool-name`; only `inference.networking.k8s.io` (v1) is " +
		"followed, `inference.networking.x-k8s.io` (v1alpha2) is refused at start",
	"config-file": "GIE's name of `--config`; with both given they must agree",
	"config-text": "GIE: an `EndpointPickerConfig` given inline (YAML) instead of a file; exclusive " +
		"with `--config`",
	"refresh-metrics-interval":    "GIE's name of `--scrape-interval`; with both given they must agree",
	"metrics-staleness-threshold": "GIE's name of `--staleness`; with both given they must agree",
	"model-server-metrics-port": "GIE: the pods' metrics port, when not the port they serve on (0); `/v1/models` is " +
		"read on the serving port",
	"model-server-metrics-path":   "GIE: path of the pods' metrics page",
	"model-server-metrics-scheme": "GIE: `http` or `https` for the pods' metrics page",
	"model-server-metrics-https-insecure-skip-verify": "GIE: with `--model-server-metrics-scheme=https`, do not verify " +
		"the pods' certificates",
	"total-queued-requests-metric": "GIE metric spec (`name` or `name{label=value,...}`) of the queue on every pod, " +
		"summed over the matching series; `\"\"` reads none. Unset: each pod's engine's own family (see Model-server " +
		"metrics)",
	"total-running-requests-metric": "GIE metric spec of the running requests on every pod, summed; `\"\"` reads " +
		"none",
	"kv-cache-usage-percentage-metric": "GIE metric spec of the KV-cache use (0 to 1) on every pod, averaged; `\"\"` " +
		"reads none",
	"lora-info-metric": "GIE metric spec of the LoRA info metric (vLLM's labels " +
		"`running_lora_adapters`, `waiting_lora_adapters`, `max_lora`); `\"\"` reads none (GIE's chart's Triton setting)",
	"cache-info-metric": "GIE metric spec of the cache-config info metric (the engine's block size " +
		"and count labels)",
	"zap-encoder": "GIE (controller-runtime): `json` sets `--log-format=json`, `console` " +
		"`--log-format=text`, unless `--log-format` is given",
	"zap-log-level": "GIE (controller-runtime): `debug`, `info`, `warn` or `error` set " +
		"`--log-level` (`dpanic`, `panic`, `fatal`: `error`); a verbosity N > 0 acts as `--v=N`; `--log-level` wins when " +
		"given",
	"v": "GIE's log verbosity: 4 and above set `--log-level=debug`, below `info`; " +
		"`--zap-log-level` and `--log-level` win when given",
	"ha-enable-leader-election": "GIE: accepted for compatibility, no effect: every replica serves (no " +
		"leader), and `liveness`/`readiness` answer on every replica",
	"tracing": "GIE: accepted for compatibility, no effect: tracing is on when " +
		"`--otlp-endpoint` or an `OTEL_EXPORTER_OTLP_*` endpoint variable is set (see Tracing)",
	"health-checking": "GIE: accepted for compatibility, no effect",
	"refresh-prometheus-metrics-interval": "GIE: accepted for compatibility, no effect: `/metrics` is computed when " +
		"scraped",
	"enable-cert-reload": "GIE: accepted for compatibility, no effect: `--cert-path` is always read at " +
		"every handshake",
	"metrics-endpoint-auth": "GIE: accepted for compatibility, no effect: `/metrics` asks for no token; " +
		"restrict the metrics port with a NetworkPolicy",
	"zap-devel":            "GIE (controller-runtime): accepted for compatibility, no effect",
	"zap-stacktrace-level": "GIE (controller-runtime): accepted for compatibility, no effect",
	"zap-time-encoding":    "GIE (controller-runtime): accepted for compatibility, no effect",
	"tenant-limits-file": "YAML file of tenant → limits (`requests_per_second`, `max_concurrent`, " +
		"`tokens_per_minute`; `\"*\"` for the tenants it does not list), enforced by the tenant header with 429 " +
		"`rate_limit_exceeded`, reloaded when it changes; for clusters without a router in front (see [tenant " +
		"limits](#tenant-limits))",
	"kv-events-trust-topic": "accept KV events whatever pod their topic names; by default a publisher must name the IP " +
		"it connects from (else its connection is closed, counted as `spoofed_pod`): set it only where a proxy hides the " +
		"pods' addresses",
	"autoscale-interval": "how often the desired replicas of each base model's pool " +
		"(`switchyard_gateway_desired_replicas`) are recomputed; 0 turns the autoscaling signal off",
	"autoscale-target-kv": "share of the pool's KV cache in use one replica count is sized for " +
		"(the KV ratio is in use / this)",
	"autoscale-target-queue": "requests waiting per ready pod (pods' and the gateway's queues) the pool is sized for",
	"autoscale-target-ttft":  "mean predicted time to first token the pool is sized for; 0 leaves TTFT out",
	"autoscale-scale-down-window": "how long a lower desired count must hold before it is published " +
		"(the highest over the window is published)",
	"autoscale-min-replicas": "lowest desired replicas published",
	"autoscale-max-replicas": "highest desired replicas published (0: unbounded)",
	"session-header": "request header that names the conversation for the `session-affinity-scorer` " +
		"(at most 256 bytes; longer is refused with 400); without it the body's `metadata.session_id`, " +
		"else `user`; `\"\"` reads the body only",
}

// bindOptions completes c's tags: the help texts, and the flags whose parse is not their
// field's type's.
func (c *Config) bindOptions() flagenv.BindOptions {
	return flagenv.BindOptions{Usage: usage, Values: map[string]flag.Value{
		"max-inflight-body-bytes": memlimit.SizeFlag{P: &c.MaxInflightBodyBytes},
	}}
}

// Flags describes every flag, with its default, in the order of Config's fields.
func Flags() []flagenv.Flag {
	return command.Flags() // it panics if Config's tags and the usage table disagree: TestFlags checks them
}

// ParseConfig builds the Config from the command line (args), then the environment (getenv)
// for the flags args leaves unset, then the --flags-file for those still unset, then the
// defaults. It returns flag.ErrHelp after printing usage to out for --help, and otherwise every
// invalid value, each naming its flag.
func ParseConfig(args []string, getenv func(string) string, out io.Writer) (Config, error) {
	c, _, err := parseConfig(args, getenv, out)
	return c, err
}

// parseConfig is ParseConfig, also returning where each flag given came from.
func parseConfig(args []string, getenv func(string) string, out io.Writer) (Config, map[string]flagenv.Source, error) {
	c, sources, err := command.Parse(args, getenv, out)
	if err != nil {
		return c, sources, err
	}
	given := func(name string) bool { return sources[name] != flagenv.Default }
	if err := c.resolveGIE(given, getenv); err != nil {
		return c, sources, err
	}
	c.complete()
	return c, sources, c.Validate()
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
