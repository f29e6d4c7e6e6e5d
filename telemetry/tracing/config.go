// Package tracing is the OpenTelemetry tracing both Switchyard binaries use: a tracer provider
// exporting spans over OTLP (gRPC or HTTP) to a collector through a bounded export queue, W3C trace context
// (traceparent, tracestate) read from
// requests and written to the requests sent on, and attribute helpers that bound every value's
// length. Tracing is off by default; a disabled Tracer starts no span, allocates nothing and
// leaves contexts unchanged, so the hot path pays one nil check.
package tracing

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Protocols of the OTLP exporter (Config.Protocol).
const (
	// ProtocolGRPC exports with OTLP/gRPC (default port 4317).
	ProtocolGRPC = "grpc"
	// ProtocolHTTP exports with OTLP/HTTP protobuf (default port 4318, path /v1/traces).
	ProtocolHTTP = "http"
)

// Config configures tracing.
type Config struct {
	// Endpoint is the collector: host:port, or a URL (http:// exports without TLS, https://
	// with it; with ProtocolHTTP the URL's path is used as is). Empty: the standard
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT environment variable,
	// and with neither set tracing is off. Default empty (off).
	Endpoint string
	// Protocol is ProtocolGRPC or ProtocolHTTP. Empty: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
	// OTEL_EXPORTER_OTLP_PROTOCOL ("grpc", "http/protobuf"), else gRPC. Default empty.
	Protocol string
	// Insecure exports without TLS to a host:port Endpoint (a URL says so by its scheme).
	// Default false: TLS, verified against the system roots, unless OTEL_EXPORTER_OTLP_INSECURE
	// says otherwise.
	Insecure bool
	// SampleRatio is the share of new traces recorded (0..1), by trace ID. A span whose parent
	// is in this process follows its parent; one whose parent is a caller's traceparent is
	// decided as RemoteParent says. Default 1.
	SampleRatio float64
	// RemoteParent says how a request's remote parent (the caller's traceparent) is treated:
	// RemoteParentRespect, RemoteParentRatio or RemoteParentIgnore. Default
	// RemoteParentIgnore, the one safe for callers that are not trusted; each binary sets its
	// own (the router ignore, the gateway respect).
	RemoteParent string
	// ServiceName names the process in every span's resource (service.name); the
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES variables override it. Default
	// "switchyard"; each binary sets its own ("cluster-gateway", "global-router").
	ServiceName string
	// ServiceVersion is service.version. Default empty.
	ServiceVersion string
	// Cluster and Region, when set, are added to the resource as switchyard.cluster and
	// switchyard.region.
	Cluster, Region string
	// Scope is the instrumentation scope of the spans (the binary's module path). Default
	// "github.com/switchyard-dev/switchyard".
	Scope string
	// MetricNamespace starts the names of the export queue's metrics, which are
	// MetricNamespace + "_trace_" + name (switchyard_gateway_trace_spans_exported_total). It
	// must be a valid Prometheus metric name. Default "switchyard".
	MetricNamespace string
}

// How a caller's traceparent is treated (Config.RemoteParent).
const (
	// RemoteParentRespect follows the caller's sampling decision: a traceparent with the sampled
	// flag is recorded, one without is not, whatever SampleRatio says; the spans join the
	// caller's trace. Only for trusted callers (a router in front of a gateway, an API gateway
	// that owns sampling): any caller can otherwise make every one of its requests recorded.
	RemoteParentRespect = "respect"
	// RemoteParentRatio keeps the caller's trace ID and tracestate, so the spans join its trace,
	// but ignores its sampled flag: the request is recorded with probability SampleRatio, drawn
	// at random per request (never from the trace ID, which the caller chooses).
	RemoteParentRatio = "ratio"
	// RemoteParentIgnore starts a new trace, sampled by SampleRatio like any new trace, with a
	// span link to the caller's span (trace and span ID only) for correlation.
	RemoteParentIgnore = "ignore"
)

// RemoteParentModes lists the Config.RemoteParent values.
func RemoteParentModes() []string {
	return []string{RemoteParentRespect, RemoteParentRatio, RemoteParentIgnore}
}

// Resource attribute keys of Config.Cluster and Config.Region.
const (
	AttrCluster = "switchyard.cluster"
	AttrRegion  = "switchyard.region"
)

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		SampleRatio:     1,
		RemoteParent:    RemoteParentIgnore,
		ServiceName:     "switchyard",
		Scope:           "github.com/switchyard-dev/switchyard",
		MetricNamespace: "switchyard",
	}
}

// metricName matches a valid Prometheus metric name.
var metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.SampleRatio < 0 || c.SampleRatio > 1 || c.SampleRatio != c.SampleRatio:
		return fmt.Errorf("tracing: SampleRatio must be in 0..1, got %g", c.SampleRatio)
	case !slices.Contains(RemoteParentModes(), c.RemoteParent):
		return fmt.Errorf("tracing: RemoteParent must be one of %s, got %q",
			strings.Join(RemoteParentModes(), ", "), c.RemoteParent)
	case c.Protocol != "" && c.Protocol != ProtocolGRPC && c.Protocol != ProtocolHTTP:
		return fmt.Errorf("tracing: Protocol must be %q or %q, got %q", ProtocolGRPC, ProtocolHTTP, c.Protocol)
	case strings.ContainsAny(c.Endpoint, " \t\r\n"):
		return errors.New("tracing: Endpoint must not contain spaces")
	case !metricName.MatchString(c.MetricNamespace):
		return fmt.Errorf("tracing: MetricNamespace must be a Prometheus metric name, got %q", c.MetricNamespace)
	}
	return nil
}

// endpoint returns the collector endpoint in force and whether tracing is on: Endpoint, else
// the standard environment variables. OTEL_SDK_DISABLED=true turns tracing off.
func (c Config) endpoint(getenv func(string) string) (string, bool) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return "", false
	}
	if c.Endpoint != "" {
		return c.Endpoint, true
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return "", true // the exporter reads the variable itself
		}
	}
	return "", false
}

// protocol returns the exporter protocol in force: Protocol, else the standard variables.
func (c Config) protocol(getenv func(string) string) string {
	if c.Protocol != "" {
		return c.Protocol
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		switch strings.TrimSpace(getenv(k)) {
		case "http/protobuf", "http/json", "http":
			return ProtocolHTTP
		case "grpc":
			return ProtocolGRPC
		}
	}
	return ProtocolGRPC
}
