// Package app assembles the cluster-gateway binary: it reads flags (and SWITCHYARD_<FLAG>
// environment variables, and a --flags-file) into one Config, builds discovery, metrics scraping, the scheduler, flow
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

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/autoscale"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/bbr"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/discovery"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/extproc"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/flowcontrol"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/kvevents"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/replica"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scheduling"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scrape"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/tracing"
	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/memlimit"
	"github.com/switchyard-dev/switchyard/contract/openai"
	"github.com/switchyard-dev/switchyard/gossip"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// Config is every setting of the gateway. Each field is one flag, named by its tag; usage below
// holds each flag's help text, and DefaultConfig its default. --help and the flags table of
// docs/gateway.md are generated from them (flagenv.Bind), so they cannot drift.
type Config struct {
	// Cluster and Region name this gateway's cluster (response headers, gossip). Cluster
	// defaults to PoolName when that is set and is required otherwise; Region is required with
	// gossip (GossipBind) and otherwise optional (no x-switchyard-region header without it).
	Cluster string `flag:"cluster" default:"--pool-name, if set"`
	Region  string `flag:"region"`
	// Listen is the HTTP proxy address. Default ":8080".
	Listen string `flag:"listen"`
	// TLSCertFile and TLSKeyFile, both or neither, serve Listen over TLS (HTTP/2 by ALPN, and
	// HTTP/1.1) for routers that reach the gateway across regions at an https:// advertise URL;
	// TLSClientCAFile then requires client certificates signed by its CAs (the routers'
	// --gateway-cert-file). The files are read at every handshake, so rotated certificates need no
	// restart. Default: plain HTTP/1.1 and h2c.
	TLSCertFile     string `flag:"tls-cert-file"`
	TLSKeyFile      string `flag:"tls-key-file"`
	TLSClientCAFile string `flag:"tls-client-ca-file"`
	// ExtProcListen is the Envoy ext_proc gRPC address; empty disables it. Default ":9002".
	ExtProcListen string `flag:"ext-proc-listen"`
	// GRPCHealthPort serves gRPC health for Kubernetes probes (GIE's --grpc-health-port and
	// services) in cleartext on this port of ExtProcListen's host (MetricsListen's when ext_proc
	// is off); 0 turns it off. Default 9003.
	GRPCHealthPort int `flag:"grpc-health-port"`
	// SecureServing serves ExtProcListen over TLS, as GIE's endpoint picker does with the flag of
	// the same name, for gateways that reach the endpoint picker with TLS (they do not verify its
	// certificate unless configured to). CertPath is a directory holding tls.crt and tls.key (a
	// Kubernetes TLS Secret mounted), read at every handshake; without it a self-signed
	// certificate is made at start. Default false: HTTP/2 cleartext, as Envoy Gateway connects.
	SecureServing bool   `flag:"secure-serving"`
	CertPath      string `flag:"cert-path"`
	// MetricsListen serves /metrics, /healthz and /readyz. Default ":9090".
	MetricsListen string `flag:"metrics-listen"`
	// EnablePprof also serves Go's runtime profiles (net/http/pprof) under /debug/pprof/ on the
	// metrics port. Default false.
	EnablePprof bool `flag:"enable-pprof"`
	// Endpoints is a static "host:port,..." list; EndpointsFile a watched YAML list; PoolName and
	// PoolNamespace an InferencePool to follow (Kubeconfig, when set, instead of in-cluster
	// credentials). Exactly one source is required.
	Endpoints     string `flag:"endpoints"`
	EndpointsFile string `flag:"endpoints-file"`
	PoolName      string `flag:"pool-name"`
	PoolNamespace string `flag:"pool-namespace" default:"NAMESPACE, else default"`
	Kubeconfig    string `flag:"kubeconfig"`
	// RoleLabel is the pod label that gives an InferencePool pod's prefill/decode role (prefill,
	// decode, both). Default "llm-d.ai/role", llm-d's.
	RoleLabel string `flag:"role-label"`
	// ConfigFile is a GIE EndpointPickerConfig file; Profile a built-in profile used without it.
	// Default profile "default".
	ConfigFile string `flag:"config"`
	Profile    string `flag:"profile"`
	// KVEventsEndpoint is the ZeroMQ endpoint (tcp://HOST:PORT) where the gateway binds a SUB
	// socket for the pods' KV cache events (vLLM's --kv-events-config publisher, connecting to
	// it); the precise-prefix-cache-scorer needs it. Default: off.
	KVEventsEndpoint string `flag:"kv-events-endpoint"`
	// KVEventsTrustTopic accepts KV events naming any pod in their topic; by default the pod a
	// topic names must be the IP the publisher connects from. Default false.
	KVEventsTrustTopic bool `flag:"kv-events-trust-topic"`
	// FlagsFile is a file of flag values, one name=value a line (flagenv's format); the command
	// line and the environment win over it. (--config is GIE's EndpointPickerConfig.)
	FlagsFile string `flag:"flags-file"`
	// Gossip settings (validated; the publisher uses them).
	GossipBind    string `flag:"gossip-bind"`
	GossipJoin    string `flag:"gossip-join"`
	GossipKeyFile string `flag:"gossip-key-file"`
	AdvertiseURL  string `flag:"advertise-url"`
	// ReplicaBind, when set, joins this gateway to its cluster's active-active replicas (package
	// replica): a memberlist pool of their own on this host:port, where each replica shares its
	// in-flight requests per pod and its prefix routes every ReplicaInterval, so the replicas
	// decide as one. ReplicaJoin lists host:port seeds (a headless Service's DNS name resolves to
	// every replica); ReplicaKeyFile is the pool's keyring (the gossip key file's format; empty:
	// unencrypted); ReplicaAdvertise is the address peers dial when not the bound one.
	// ReplicaMaxAge is the staleness bound of a peer's report. Defaults: off, 75ms, 1s.
	ReplicaBind      string        `flag:"replica-bind"`
	ReplicaJoin      string        `flag:"replica-join"`
	ReplicaKeyFile   string        `flag:"replica-key-file"`
	ReplicaAdvertise string        `flag:"replica-advertise"`
	ReplicaInterval  time.Duration `flag:"replica-interval"`
	ReplicaMaxAge    time.Duration `flag:"replica-max-age"`
	// SummarySigningKeyFile holds the cluster's Ed25519 signing key (PEM PKCS #8 or the base64 of
	// the 32-byte seed); every capacity summary is signed with it, and routers that have the
	// cluster registered accept only summaries its public key verifies. Re-read every 10 s.
	// Default: unsigned.
	SummarySigningKeyFile string `flag:"summary-signing-key-file"`
	// LogFormat is text or json; LogLevel debug, info, warn or error. Defaults text, info.
	LogFormat string `flag:"log-format"`
	LogLevel  string `flag:"log-level"`
	// OTLPEndpoint is the OpenTelemetry collector spans are exported to (host:port or URL);
	// empty: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT, and with
	// neither tracing is off. OTLPProtocol is grpc or http (empty: the OTEL_* protocol
	// variables, else grpc); OTLPInsecure exports without TLS to a host:port endpoint;
	// TraceSampleRatio is the share of new traces recorded; TraceRemoteParent says how a
	// caller's traceparent is treated: respect (its sampled flag decides), ratio (its trace is
	// kept, the ratio decides) or ignore (a new trace, linked to the caller's span). Defaults:
	// off, grpc, TLS, 1, respect.
	OTLPEndpoint      string  `flag:"otlp-endpoint"`
	OTLPProtocol      string  `flag:"otlp-protocol" default:"OTEL_EXPORTER_OTLP_PROTOCOL, else grpc"`
	OTLPInsecure      bool    `flag:"otlp-insecure"`
	TraceSampleRatio  float64 `flag:"trace-sample-ratio"`
	TraceRemoteParent string  `flag:"trace-remote-parent"`
	// ScrapeInterval is the per-pod metrics scrape interval for small fleets. Default 50 ms.
	ScrapeInterval time.Duration `flag:"scrape-interval"`
	// Staleness is the metrics age beyond which a pod is not counted for readiness. Default 2 s.
	Staleness time.Duration `flag:"staleness"`
	// MaxBodyBytes is the request body limit (413 beyond). Default 32 MiB.
	MaxBodyBytes int64 `flag:"max-body-bytes"`
	// MaxInflightBodyBytes is the in-flight body budget: the request-body memory both front
	// doors may hold at once, beyond which a request is answered 503 with Retry-After. 0
	// (--max-inflight-body-bytes=auto) is a quarter of the Go memory limit in force (see
	// MemoryLimit), or 256 MiB without one, and never less than MaxBodyBytes. Default auto.
	MaxInflightBodyBytes int64 `flag:"max-inflight-body-bytes"`
	// MemoryLimit is the Go runtime's soft memory limit (runtime/debug.SetMemoryLimit): bytes
	// with an optional suffix (e.g. 1536MiB), "auto" for 90% of the cgroup's memory.max (no limit
	// outside a memory-limited cgroup), or "none". Default "": GOMEMLIMIT when it is set, else
	// auto.
	MemoryLimit string `flag:"memory-limit" default:"GOMEMLIMIT, else auto"`
	// AdapterMap is "adapter=base,..." or a YAML file of adapter: base. Default empty.
	AdapterMap string `flag:"adapter-map"`
	// PassthroughPaths are the engine paths this pool's HTTP proxy forwards (POST) to a pod
	// serving the request's model: PATH=json (the body's model member) or PATH=multipart (a
	// form field, the rest of the body streamed), comma-separated; "none" for none. Default
	// openai.DefaultPassthroughPaths (vLLM's tokenize, rerank, score, pooling, classify and
	// audio paths).
	PassthroughPaths string `flag:"passthrough-paths"`
	// TenantLimitsFile is a YAML file of tenant name to limits (requests_per_second,
	// max_concurrent, tokens_per_minute; "*" for every tenant it does not list), enforced on
	// every request by its tenant header and re-read when it changes. Default "": no limits.
	TenantLimitsFile string `flag:"tenant-limits-file"`
	// EndpointHeader adds x-switchyard-endpoint, the serving pod's name, to responses. Default
	// true. EndpointHeaderAddress shows the pod's ip:port there instead, for debugging (the
	// address is internal to the cluster). Default false.
	EndpointHeader        bool `flag:"endpoint-header"`
	EndpointHeaderAddress bool `flag:"endpoint-header-address"`
	// SessionHeader names the request header that carries a session id for session affinity;
	// "" reads only the body's metadata.session_id or user. Default "x-session-id".
	SessionHeader string `flag:"session-header"`
	// QueueLimit, QueueTTL and ObjectivePriorities configure flow control (defaults 1024, 10 s, "").
	QueueLimit          int           `flag:"queue-limit"`
	QueueTTL            time.Duration `flag:"queue-ttl"`
	ObjectivePriorities string        `flag:"objective-priorities"`
	// MinPriority and MaxPriority bound the priority bands: an x-switchyard-priority header
	// outside them (or not an integer) is answered 400, and every --objective-priorities value
	// must lie inside them. Defaults -10 and 10.
	MinPriority int `flag:"min-priority"`
	MaxPriority int `flag:"max-priority"`
	// MaxAttempts bounds the endpoints the HTTP proxy tries per request. Default 3.
	MaxAttempts int `flag:"max-attempts"`
	// MaxEjectionPercent caps the share of the pool's endpoints that passive health may eject at
	// once, as Envoy's max_ejection_percent (at least one of two or more; a lone endpoint is
	// never ejected below 100). 0 turns ejection off. Default 50.
	MaxEjectionPercent int `flag:"max-ejection-percent"`
	// DrainTimeout bounds the wait for in-flight streams at shutdown. Default 30 s.
	DrainTimeout time.Duration `flag:"drain-timeout"`
	// Autoscaling signal: every AutoscaleInterval (0: off) the desired replicas of each base
	// model's pool (switchyard_gateway_desired_replicas{model}) from KV cache in use over
	// AutoscaleTargetKV, requests waiting per ready pod over AutoscaleTargetQueue and mean
	// predicted TTFT over AutoscaleTargetTTFT (0: not used), the highest ratio deciding; a lower
	// count is published once it has held for AutoscaleScaleDownWindow; bounded to
	// [AutoscaleMinReplicas, AutoscaleMaxReplicas] (0: unbounded). See docs/operators.md.
	// Defaults 5 s, 0.75, 2, 2 s, 5 min, 1, 0.
	AutoscaleInterval        time.Duration `flag:"autoscale-interval"`
	AutoscaleTargetKV        float64       `flag:"autoscale-target-kv"`
	AutoscaleTargetQueue     float64       `flag:"autoscale-target-queue"`
	AutoscaleTargetTTFT      time.Duration `flag:"autoscale-target-ttft"`
	AutoscaleScaleDownWindow time.Duration `flag:"autoscale-scale-down-window"`
	AutoscaleMinReplicas     int           `flag:"autoscale-min-replicas"`
	AutoscaleMaxReplicas     int           `flag:"autoscale-max-replicas"`
	// ExtProcBodyTimeout bounds the time from a request's headers to the end of its body on the
	// ext_proc server: past it the request is answered 408 and its body released (see
	// extproc.Config.BodyTimeout). Default 30 s; must be positive.
	ExtProcBodyTimeout time.Duration `flag:"ext-proc-body-timeout"`

	// GIE's endpoint-picker flags, so that the gateway runs with the arguments GIE's
	// inferencepool Helm chart passes (gie.go, docs/gateway.md "GIE compatibility"). The flags
	// that name a setting of ours under GIE's name (--grpc-port, --metrics-port,
	// --config-file, --refresh-metrics-interval, --metrics-staleness-threshold, --zap-encoder,
	// --zap-log-level, --v) are resolved into it by ParseConfig, which knows which flags were
	// given; the others are read by New.

	// GRPCPort sets ExtProcListen to ":PORT" (GIE's ext_proc port). Default 9002, as
	// ExtProcListen's.
	GRPCPort int `flag:"grpc-port"`
	// MetricsPort sets MetricsListen to ":PORT". Default 9090, as MetricsListen's.
	MetricsPort int `flag:"metrics-port"`
	// PoolGroup is the InferencePool's API group: only inference.networking.k8s.io (v1) is
	// followed. Default inference.networking.k8s.io.
	PoolGroup string `flag:"pool-group"`
	// ConfigFileGIE is GIE's name of ConfigFile. Default "".
	ConfigFileGIE string `flag:"config-file"`
	// ConfigText is an EndpointPickerConfig given inline, exclusive with ConfigFile. Default "".
	ConfigText string `flag:"config-text"`
	// RefreshMetricsInterval and MetricsStalenessThreshold are GIE's names of ScrapeInterval
	// and Staleness (same defaults: 50 ms, 2 s).
	RefreshMetricsInterval    time.Duration `flag:"refresh-metrics-interval"`
	MetricsStalenessThreshold time.Duration `flag:"metrics-staleness-threshold"`
	// ModelServerMetricsPort, when not 0, is the pods' metrics port instead of their serving
	// port; ModelServerMetricsPath the metrics path; ModelServerMetricsScheme http or https,
	// with ModelServerMetricsInsecure skipping certificate checks. Defaults 0, /metrics, http,
	// true (GIE's).
	ModelServerMetricsPort     int    `flag:"model-server-metrics-port"`
	ModelServerMetricsPath     string `flag:"model-server-metrics-path"`
	ModelServerMetricsScheme   string `flag:"model-server-metrics-scheme"`
	ModelServerMetricsInsecure bool   `flag:"model-server-metrics-https-insecure-skip-verify"`
	// The metric flags: GIE metric specs ("name" or "name{label=value}") of the families read
	// for each signal on every pod. Unset: each engine's own names (ParseConfig fills
	// Families from the flags given, "" included: it turns the signal off).
	TotalQueuedRequestsMetric    string `flag:"total-queued-requests-metric" default:"the engine's own"`
	TotalRunningRequestsMetric   string `flag:"total-running-requests-metric" default:"the engine's own"`
	KVCacheUsagePercentageMetric string `flag:"kv-cache-usage-percentage-metric" default:"the engine's own"`
	LoRAInfoMetric               string `flag:"lora-info-metric" default:"the engine's own"`
	CacheInfoMetric              string `flag:"cache-info-metric" default:"the engine's own"`
	// Families is what the metric flags given make of the scraper's families; set by
	// ParseConfig (or by a caller of New directly).
	Families scrape.Families `flag:"-"`
	// ZapEncoder (json or console) and ZapLogLevel (debug, info, error, panic or a verbosity
	// N > 0) and Verbosity (GIE's --v) set LogFormat and LogLevel unless those are given.
	// Defaults "", "", 0.
	ZapEncoder  string `flag:"zap-encoder"`
	ZapLogLevel string `flag:"zap-log-level"`
	Verbosity   int    `flag:"v"`
	// GIE flags that have no effect here: accepted, and logged at start when given.
	LeaderElection            bool          `flag:"ha-enable-leader-election"`
	Tracing                   bool          `flag:"tracing"`
	HealthChecking            bool          `flag:"health-checking"`
	RefreshPrometheusInterval time.Duration `flag:"refresh-prometheus-metrics-interval"`
	EnableCertReload          bool          `flag:"enable-cert-reload"`
	MetricsEndpointAuth       bool          `flag:"metrics-endpoint-auth"`
	ZapDevel                  bool          `flag:"zap-devel"`
	ZapStacktraceLevel        string        `flag:"zap-stacktrace-level"`
	ZapTimeEncoding           string        `flag:"zap-time-encoding"`
}

// DefaultConfig returns the defaults documented on each field.
func DefaultConfig() Config {
	return Config{
		Listen:         ":8080",
		ExtProcListen:  ":9002",
		MetricsListen:  ":9090",
		GRPCHealthPort: 9003,
		Profile:        scheduling.ProfileDefault,
		RoleLabel:      discovery.DefaultPoolConfig().RoleLabel,
		LogFormat:      "text",
		LogLevel:       "info",

		TraceSampleRatio:  tracing.DefaultConfig().SampleRatio,
		TraceRemoteParent: tracing.DefaultConfig().RemoteParent,
		ScrapeInterval:    50 * time.Millisecond,
		Staleness:         2 * time.Second,
		MaxBodyBytes:      bbr.DefaultConfig().MaxBodyBytes,
		EndpointHeader:    true,
		SessionHeader:     contract.HeaderSessionID,
		PassthroughPaths:  openai.DefaultPassthroughPaths,
		QueueLimit:        flowcontrol.DefaultConfig().MaxQueue,
		QueueTTL:          flowcontrol.DefaultConfig().TTL,
		MinPriority:       flowcontrol.DefaultMinPriority,
		MaxPriority:       flowcontrol.DefaultMaxPriority,
		MaxAttempts:       3,
		DrainTimeout:      30 * time.Second,

		MaxEjectionPercent: datastore.DefaultMaxEjectionPercent,
		ReplicaInterval:    replica.DefaultConfig().Interval,
		ReplicaMaxAge:      replica.DefaultConfig().MaxAge,
		ExtProcBodyTimeout: extproc.DefaultBodyTimeout,

		AutoscaleInterval:        autoscale.DefaultConfig().Interval,
		AutoscaleTargetKV:        autoscale.DefaultConfig().TargetKVUtilization,
		AutoscaleTargetQueue:     autoscale.DefaultConfig().TargetQueuePerPod,
		AutoscaleTargetTTFT:      autoscale.DefaultConfig().TargetTTFT,
		AutoscaleScaleDownWindow: autoscale.DefaultConfig().ScaleDownWindow,
		AutoscaleMinReplicas:     autoscale.DefaultConfig().MinReplicas,
		AutoscaleMaxReplicas:     autoscale.DefaultConfig().MaxReplicas,

		GRPCPort:                   9002,
		MetricsPort:                9090,
		PoolGroup:                  poolGroupV1,
		RefreshMetricsInterval:     50 * time.Millisecond,
		MetricsStalenessThreshold:  2 * time.Second,
		ModelServerMetricsPath:     "/metrics",
		ModelServerMetricsScheme:   "http",
		ModelServerMetricsInsecure: true,
		RefreshPrometheusInterval:  5 * time.Second,
	}
}

// Validate returns every problem of the configuration (errors.Join), each naming its flag.
func (c Config) Validate() error {
	var errs []error
	for _, check := range []func() []error{c.validateIdentity, c.validateListeners, c.validateDiscovery,
		c.validateScheduling, c.validateLimits, c.validateFlowControl, c.validateGossip, c.validateReplicas,
		c.validateLogging, c.validateGIE, c.validateAutoscale} {
		errs = append(errs, check()...)
	}
	return errors.Join(errs...)
}

// autoscaleConfig is the autoscaling signal's configuration from the --autoscale-* flags.
func (c Config) autoscaleConfig() autoscale.Config {
	ac := autoscale.DefaultConfig()
	ac.Interval = c.AutoscaleInterval
	ac.TargetKVUtilization, ac.TargetQueuePerPod = c.AutoscaleTargetKV, c.AutoscaleTargetQueue
	ac.TargetTTFT, ac.ScaleDownWindow = c.AutoscaleTargetTTFT, c.AutoscaleScaleDownWindow
	ac.MinReplicas, ac.MaxReplicas = c.AutoscaleMinReplicas, c.AutoscaleMaxReplicas
	return ac
}

func (c Config) validateAutoscale() []error {
	if c.AutoscaleInterval < 0 {
		return []error{fmt.Errorf("--autoscale-interval must not be negative, got %v", c.AutoscaleInterval)}
	}
	if c.AutoscaleInterval == 0 {
		return nil // off
	}
	// Each flag alone against the defaults, so that the error names it; then the whole.
	var errs []error
	for _, f := range []struct {
		flag  string
		value any
		set   func(*autoscale.Config)
	}{
		{"autoscale-target-kv", c.AutoscaleTargetKV, func(a *autoscale.Config) {
			a.TargetKVUtilization = c.AutoscaleTargetKV
		}},
		{"autoscale-target-queue", c.AutoscaleTargetQueue, func(a *autoscale.Config) {
			a.TargetQueuePerPod = c.AutoscaleTargetQueue
		}},
		{"autoscale-target-ttft", c.AutoscaleTargetTTFT, func(a *autoscale.Config) { a.TargetTTFT = c.AutoscaleTargetTTFT }},
		{"autoscale-scale-down-window", c.AutoscaleScaleDownWindow, func(a *autoscale.Config) {
			a.ScaleDownWindow = c.AutoscaleScaleDownWindow
		}},
		{"autoscale-min-replicas", c.AutoscaleMinReplicas, func(a *autoscale.Config) {
			a.MinReplicas, a.MaxReplicas = c.AutoscaleMinReplicas, 0
		}},
		{"autoscale-max-replicas", c.AutoscaleMaxReplicas, func(a *autoscale.Config) {
			a.MinReplicas, a.MaxReplicas = 0, c.AutoscaleMaxReplicas
		}},
	} {
		ac := autoscale.DefaultConfig()
		f.set(&ac)
		if err := ac.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("--%s=%v: %w", f.flag, f.value, err))
		}
	}
	if len(errs) == 0 {
		if err := c.autoscaleConfig().Validate(); err != nil {
			errs = append(errs, fmt.Errorf("--autoscale-min-replicas and --autoscale-max-replicas: %w", err))
		}
	}
	return errs
}

func (c Config) validateIdentity() []error {
	var errs []error
	if strings.TrimSpace(c.Cluster) == "" {
		errs = append(errs, errors.New("--cluster is required (it defaults to --pool-name when that is set)"))
	}
	if strings.TrimSpace(c.Region) == "" && c.GossipBind != "" {
		errs = append(errs, errors.New("--region is required with gossip (--gossip-bind)"))
	}
	return errs
}

// complete fills the defaults computed from other fields: --cluster from --pool-name, and
// --pool-namespace "default" when empty (ParseConfig first tries the NAMESPACE variable).
func (c *Config) complete() {
	if strings.TrimSpace(c.Cluster) == "" && c.PoolName != "" {
		c.Cluster = c.PoolName
	}
	if c.PoolNamespace == "" {
		c.PoolNamespace = "default"
	}
}

func (c Config) validateListeners() []error {
	var errs []error
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-key-file must be given together"))
	}
	if c.TLSClientCAFile != "" && c.TLSCertFile == "" {
		errs = append(errs, errors.New("--tls-client-ca-file needs --tls-cert-file and --tls-key-file"))
	}
	if c.CertPath != "" && !c.SecureServing {
		errs = append(errs, errors.New("--cert-path needs --secure-serving"))
	}
	if c.SecureServing && c.ExtProcListen == "" {
		errs = append(errs, errors.New("--secure-serving needs --ext-proc-listen"))
	}
	if c.GRPCHealthPort < 0 || c.GRPCHealthPort > 65535 {
		errs = append(errs, fmt.Errorf("--grpc-health-port=%d: want a port, or 0 for none", c.GRPCHealthPort))
	}
	for _, l := range []struct{ flag, addr string }{{"--listen", c.Listen}, {"--metrics-listen", c.MetricsListen},
		{"--ext-proc-listen", c.ExtProcListen}} {
		if l.addr == "" && l.flag == "--ext-proc-listen" {
			continue
		}
		if _, _, err := net.SplitHostPort(l.addr); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want host:port: %v", l.flag, l.addr, err))
		}
	}
	return errs
}

func (c Config) validateDiscovery() []error {
	var errs []error
	n := 0
	for _, set := range []bool{c.Endpoints != "", c.EndpointsFile != "", c.PoolName != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		errs = append(errs, errors.New("exactly one of --endpoints, --endpoints-file or --pool-name is required"))
	}
	return errs
}

func (c Config) validateScheduling() []error {
	if c.ConfigFile != "" && c.ConfigText != "" {
		return []error{
			errors.New("--config (or --config-file) and --config-text are exclusive: give the EndpointPickerConfig once"),
		}
	}
	if err := validSessionHeader(c.SessionHeader); err != nil {
		return []error{err}
	}
	if c.ConfigFile != "" {
		if _, err := os.Stat(c.ConfigFile); err != nil {
			return []error{fmt.Errorf("--config: %w", err)}
		}
		return nil
	}
	if c.ConfigText != "" {
		return nil // parsed when the scheduler is built
	}
	if err := (scheduling.Config{Profile: c.Profile}).Validate(); err != nil {
		return []error{err}
	}
	return nil
}

func (c Config) validateLimits() []error {
	var errs []error
	add := func(bad bool, format string, args ...any) {
		if bad {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	add(c.ScrapeInterval <= 0, "--scrape-interval must be positive, got %v", c.ScrapeInterval)
	add(c.Staleness <= 0, "--staleness must be positive, got %v", c.Staleness)
	add(c.MaxBodyBytes <= 0, "--max-body-bytes must be positive, got %d", c.MaxBodyBytes)
	add(c.MaxInflightBodyBytes < 0, "--max-inflight-body-bytes must not be negative, got %d", c.MaxInflightBodyBytes)
	add(c.MaxInflightBodyBytes > 0 && c.MaxInflightBodyBytes < c.MaxBodyBytes,
		"--max-inflight-body-bytes=%d must be at least --max-body-bytes=%d, or no body of the largest size could be read",
		c.MaxInflightBodyBytes, c.MaxBodyBytes)
	add(c.MaxAttempts < 1, "--max-attempts must be at least 1, got %d", c.MaxAttempts)
	add(c.DrainTimeout <= 0, "--drain-timeout must be positive, got %v", c.DrainTimeout)
	add(c.ExtProcBodyTimeout <= 0, "--ext-proc-body-timeout must be positive, got %v", c.ExtProcBodyTimeout)
	add(
		c.MaxEjectionPercent < 0 || c.MaxEjectionPercent > 100,
		"--max-ejection-percent must be 0..100, got %d",
		c.MaxEjectionPercent,
	)
	if err := memlimit.Check(c.MemoryLimit); err != nil {
		errs = append(errs, fmt.Errorf("--memory-limit=%q: %w", c.MemoryLimit, err))
	}
	if _, err := bbr.ParseAdapterMap(c.AdapterMap); err != nil {
		errs = append(errs, fmt.Errorf("--adapter-map: %w", err))
	}
	if _, err := openai.ParsePassthroughPaths(c.PassthroughPaths); err != nil {
		errs = append(errs, fmt.Errorf("--passthrough-paths: %w", err))
	}
	return errs
}

func (c Config) validateFlowControl() []error {
	var errs []error
	if c.QueueLimit < 0 {
		errs = append(errs, fmt.Errorf("--queue-limit must not be negative, got %d", c.QueueLimit))
	}
	if c.QueueTTL <= 0 {
		errs = append(errs, fmt.Errorf("--queue-ttl must be positive, got %v", c.QueueTTL))
	}
	objectives, err := flowcontrol.ParseObjectivePriorities(c.ObjectivePriorities)
	if err != nil {
		return append(errs, fmt.Errorf("--objective-priorities: %w", err))
	}
	if err := c.validatePriorities(objectives); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// validatePriorities checks the priority range and that every objective's priority is in it.
func (c Config) validatePriorities(objectives map[string]int) error {
	fc := flowcontrol.DefaultConfig()
	fc.MinPriority, fc.MaxPriority = c.MinPriority, c.MaxPriority
	switch {
	case c.MinPriority > c.MaxPriority:
		return fmt.Errorf("--min-priority=%d is above --max-priority=%d", c.MinPriority, c.MaxPriority)
	case fc.DefaultPriority < c.MinPriority || fc.DefaultPriority > c.MaxPriority:
		return fmt.Errorf(
			"--min-priority=%d..--max-priority=%d must include the default priority %d",
			c.MinPriority,
			c.MaxPriority,
			fc.DefaultPriority,
		)
	}
	if err := fc.ValidateObjectives(objectives); err != nil {
		return fmt.Errorf(
			"--objective-priorities: %w (--min-priority=%d, --max-priority=%d)",
			err,
			c.MinPriority,
			c.MaxPriority,
		)
	}
	return nil
}

func (c Config) validateGossip() []error {
	var errs []error
	if c.KVEventsEndpoint != "" {
		if _, err := kvevents.ListenAddr(c.KVEventsEndpoint); err != nil {
			errs = append(errs, fmt.Errorf("--kv-events-endpoint: %w", err))
		}
	}
	if c.GossipJoin != "" && c.GossipBind == "" {
		errs = append(errs, errors.New("--gossip-join needs --gossip-bind"))
	}
	if c.GossipBind != "" {
		if _, _, err := net.SplitHostPort(c.GossipBind); err != nil {
			errs = append(errs, fmt.Errorf("--gossip-bind=%q: want host:port: %v", c.GossipBind, err))
		}
	}
	for _, peer := range splitList(c.GossipJoin) {
		if _, _, err := net.SplitHostPort(peer); err != nil {
			errs = append(errs, fmt.Errorf("--gossip-join: %q: want host:port: %v", peer, err))
		}
	}
	if err := c.validateAdvertiseURL(); err != nil {
		errs = append(errs, err)
	}
	if c.GossipKeyFile != "" {
		if _, err := ReadGossipKeys(c.GossipKeyFile); err != nil {
			errs = append(errs, fmt.Errorf("--gossip-key-file: %w", err))
		}
	}
	if c.SummarySigningKeyFile != "" {
		if c.GossipBind == "" {
			errs = append(errs, errors.New("--summary-signing-key-file needs --gossip-bind"))
		} else if _, err := gossip.LoadSigningKeyFile(c.SummarySigningKeyFile); err != nil {
			errs = append(errs, fmt.Errorf("--summary-signing-key-file: %w", err))
		}
	}
	return errs
}

func (c Config) validateReplicas() []error {
	var errs []error
	if c.ReplicaBind == "" {
		for flag, v := range map[string]string{"--replica-join": c.ReplicaJoin, "--replica-key-file": c.ReplicaKeyFile,
			"--replica-advertise": c.ReplicaAdvertise} {
			if v != "" {
				errs = append(errs, fmt.Errorf("%s needs --replica-bind", flag))
			}
		}
		return errs
	}
	if _, _, err := gossip.ParseAddr(c.ReplicaBind); err != nil {
		errs = append(errs, fmt.Errorf("--replica-bind=%q: want host:port: %v", c.ReplicaBind, err))
	}
	if c.ReplicaAdvertise != "" {
		if _, _, err := gossip.ParseAddr(c.ReplicaAdvertise); err != nil {
			errs = append(errs, fmt.Errorf("--replica-advertise=%q: want host:port: %v", c.ReplicaAdvertise, err))
		}
	}
	for _, peer := range splitList(c.ReplicaJoin) {
		if _, _, err := net.SplitHostPort(peer); err != nil {
			errs = append(errs, fmt.Errorf("--replica-join: %q: want host:port: %v", peer, err))
		}
	}
	if c.ReplicaKeyFile != "" {
		if _, err := ReadGossipKeys(c.ReplicaKeyFile); err != nil {
			errs = append(errs, fmt.Errorf("--replica-key-file: %w", err))
		}
	}
	if c.ReplicaInterval <= 0 || c.ReplicaMaxAge <= c.ReplicaInterval {
		errs = append(errs, fmt.Errorf("--replica-interval=%v, --replica-max-age=%v: want 0 < interval < max age",
			c.ReplicaInterval, c.ReplicaMaxAge))
	}
	return errs
}

func (c Config) validateAdvertiseURL() error {
	if c.AdvertiseURL == "" {
		return nil
	}
	u, err := url.Parse(c.AdvertiseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--advertise-url=%q: want an http(s) URL", c.AdvertiseURL)
	}
	if u.Scheme == "http" && c.TLSCertFile != "" {
		return fmt.Errorf("--advertise-url=%q: --listen serves TLS (--tls-cert-file): want an https URL", c.AdvertiseURL)
	}
	return nil
}

func (c Config) validateLogging() []error {
	var errs []error
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format=%q: want text or json", c.LogFormat))
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("--log-level: %w", err))
	}
	if err := c.tracingConfig().Validate(); err != nil {
		errs = append(
			errs,
			fmt.Errorf("--otlp-endpoint, --otlp-protocol, --trace-sample-ratio, --trace-remote-parent: %w", err),
		)
	}
	return errs
}

// tracingConfig is the tracing configuration of the flags.
func (c Config) tracingConfig() telemetry.Config {
	tc := tracing.DefaultConfig()
	tc.Endpoint, tc.Protocol, tc.Insecure, tc.SampleRatio, tc.RemoteParent =
		c.OTLPEndpoint, c.OTLPProtocol, c.OTLPInsecure, c.TraceSampleRatio, c.TraceRemoteParent
	tc.ServiceVersion, tc.Cluster, tc.Region = Version, c.Cluster, c.Region
	return tc
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

// validSessionHeader checks --session-header: "" or a lower-case HTTP header name (letters,
// digits, '-') that is not a routing header (those are dropped before the scheduler could read
// them from a client).
func validSessionHeader(h string) error {
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return fmt.Errorf("--session-header %q: want a lower-case header name (a-z, 0-9, '-')", h)
		}
	}
	if contract.IsReserved(h) {
		return fmt.Errorf("--session-header %q: x-switchyard-* and x-gateway-* names are reserved", h)
	}
	return nil
}
