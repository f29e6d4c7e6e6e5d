package app

import (
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/switchyard-dev/switchyard/contract/flagenv"
	"github.com/switchyard-dev/switchyard/contract/memlimit"
)

// EnvPrefix prefixes the environment variable of every flag: --listen is SWITCHYARD_LISTEN,
// --ext-proc-listen SWITCHYARD_EXT_PROC_LISTEN. Command-line flags win over the environment,
// and the environment over the --flags-file.
const EnvPrefix = flagenv.Prefix + "_"

// usage is the help text of every Config field's flag, in the docs' words (backticks mark code;
// --help drops them). It is the field table flagenv.Bind completes the struct's tags with.
var usage = map[string]string{
	"cluster":            "name of this cluster (required): sent as `x-switchyard-cluster` and published to gossip",
	"region":             "region of this cluster (required): sent as `x-switchyard-region` and published to gossip",
	"listen":             "HTTP proxy address: OpenAI API, `/healthz`, `/readyz`",
	"tls-cert-file":      "PEM certificate that serves `--listen` over TLS (HTTP/2 by ALPN, and HTTP/1.1), with `--tls-key-file`, for routers that reach the gateway across regions at an `https://` `--advertise-url` (the default advertised URL is then `https://`, and an `http://` one is refused at start); read at every handshake, so a rotated certificate needs no restart",
	"tls-key-file":       "PEM key of `--tls-cert-file`",
	"tls-client-ca-file": "PEM CAs whose client certificates `--listen` requires over TLS (the routers' `--gateway-cert-file`)",
	"ext-proc-listen":    "Envoy ext_proc gRPC server and gRPC health; empty disables it",
	"secure-serving": "serve `--ext-proc-listen` over TLS, as GIE's endpoint picker's flag of the same name does, for gateways that reach " +
		"their endpoint picker with TLS (they do not verify its certificate unless configured to); off by default, unlike GIE's, " +
		"as Envoy Gateway connects in HTTP/2 cleartext; gRPC health is then on the TLS port too, so probe `/healthz` on the metrics port",
	"cert-path":       "directory with `tls.crt` and `tls.key` for `--secure-serving` (a Kubernetes TLS Secret mounted), read at every handshake; empty: a self-signed certificate made at start",
	"metrics-listen":  "address of `/metrics` (Prometheus), `/healthz` and `/readyz`",
	"enable-pprof":    "also serve Go's runtime profiles (`net/http/pprof`) under `/debug/pprof/` on the metrics port; a CPU profile or trace must end within the port's 30 s write timeout",
	"endpoints":       "static pods: `host:port` or `name=host:port` items, comma-separated (see endpoint names in gateway-data.md)",
	"endpoints-file":  "YAML list of pods, re-read when it changes",
	"pool-name":       "GIE `InferencePool` to follow, with its ready pods",
	"pool-namespace":  "namespace of `--pool-name`",
	"kubeconfig":      "kubeconfig file for `--pool-name` (empty: in-cluster credentials)",
	"config":          "GIE `EndpointPickerConfig` YAML file; replaces `--profile`",
	"profile":         "built-in scheduling profile: `default`, `gie-default`, `gie-lora`, or a baseline: `round-robin`, `least-request`, `random`, `weighted-round-robin`, `p2c`, `leastconn` (docs/scheduling.md)",
	"flags-file":      "file of flag values, one `name=value` a line; the command line and the environment win over it",
	"gossip-bind":     "gossip address `host:port` (empty: no gossip)",
	"gossip-join":     "gossip peers to join: `host:port,...` (needs `--gossip-bind`)",
	"gossip-key-file": "gossip keyring: base64 32-byte keys, one per line; the first sends, all are accepted; re-read every 10 s",
	"advertise-url":   "URL routers use to reach this gateway (default: from `--listen`)",
	"summary-signing-key-file": "the cluster's Ed25519 signing key (PEM `PRIVATE KEY`, PKCS #8, or the base64 of the 32-byte seed); every capacity " +
		"summary is signed with it, and routers with registered clusters accept only summaries a registered key verifies (see gossip.md); " +
		"re-read every 10 s. Empty: summaries are unsigned",
	"log-format":      "log format: `text` or `json` (`log/slog`)",
	"log-level":       "log level: `debug`, `info`, `warn`, `error`",
	"scrape-interval": "per-pod metrics scrape interval (grows with the pod count)",
	"staleness":       "metrics age beyond which a pod does not count towards readiness",
	"max-body-bytes":  "request body limit in bytes (32 MiB); larger bodies get 413",
	"max-inflight-body-bytes": "the in-flight body budget: request-body memory both front doors may hold at once (bytes, or with a unit: " +
		"`256MiB`, `1Gi`); beyond it a request gets 503 with `Retry-After`. `auto` is a quarter of the Go memory limit in force, " +
		"or 256 MiB without one, never below `--max-body-bytes`",
	"memory-limit": "the Go runtime's soft memory limit (`runtime/debug.SetMemoryLimit`): bytes with a unit (`1536MiB`), `auto` for 90% " +
		"of the cgroup's `/sys/fs/cgroup/memory.max` (none outside a memory-limited cgroup), or `none`; logged at start",
	"adapter-map":             "LoRA adapters pods load on demand: `adapter=base,...` or a YAML file of `adapter: base`",
	"endpoint-header":         "add `x-switchyard-endpoint` (the serving pod's name) to responses",
	"endpoint-header-address": "debugging: show the pod's `ip:port` in `x-switchyard-endpoint` instead of its name (the address is internal to the cluster)",
	"queue-limit":             "most requests held by flow control",
	"queue-ttl":               "longest wait in the flow-control queue before 429",
	"objective-priorities":    "map `x-gateway-inference-objective` values to priorities: `critical=10,batch=-1`; each must lie in `--min-priority`..`--max-priority`",
	"min-priority":            "lowest priority band: an `x-switchyard-priority` below it, or not an integer, is answered 400; the range must include 0, the default priority",
	"max-priority":            "highest priority band: an `x-switchyard-priority` above it is answered 400",
	"max-attempts":            "pods the HTTP proxy tries per request",
	"max-ejection-percent":    "most pods passive health may eject at once, in percent of the pool (0..100; at least one of two or more; a lone pod never, below 100; 0 turns ejection off)",
	"drain-timeout":           "longest wait for in-flight streams at shutdown",
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
	c := DefaultConfig()
	flags, err := flagenv.Bind(flag.NewFlagSet("cluster-gateway", flag.ContinueOnError), &c, c.bindOptions())
	if err != nil {
		panic(err) // Config's tags and the usage table: TestFlags checks them
	}
	return flags
}

// EnvName is the environment variable of a flag.
func EnvName(flagName string) string {
	return flagenv.EnvName(flagenv.Prefix, flagName)
}

// ParseConfig builds the Config from the command line (args), then the environment (getenv)
// for the flags args leaves unset, then the --flags-file for those still unset, then the
// defaults. It returns flag.ErrHelp after printing usage to out for --help, and otherwise every
// invalid value, each naming its flag.
func ParseConfig(args []string, getenv func(string) string, out io.Writer) (Config, error) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("cluster-gateway", flag.ContinueOnError)
	fs.SetOutput(out)
	flags, err := flagenv.Bind(fs, &c, c.bindOptions())
	if err != nil {
		return c, err
	}
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: cluster-gateway --cluster=NAME --region=NAME (--endpoints=LIST | --endpoints-file=FILE | --pool-name=N) [flags]\n\n")
		fmt.Fprintf(out, "Every flag may also be set with the environment variable %s<FLAG> (e.g. %s), or in the file\n", EnvPrefix, EnvName("listen"))
		fmt.Fprintf(out, "--flags-file names (name=value lines); the command line wins over both, the environment over the file.\n\n")
		flagenv.PrintUsage(out, flags, flagenv.Prefix)
	}
	if _, err := flagenv.Parse(fs, args, flagenv.Options{EnvPrefix: flagenv.Prefix, Getenv: getenv, FileFlag: "flags-file"}); err != nil {
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
