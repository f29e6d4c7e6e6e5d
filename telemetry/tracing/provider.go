package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Span limits: every span's attribute values, attributes and events are bounded, whatever an
// instrumentation sets (the helpers of this package bound values before they reach the SDK).
const (
	// MaxAttributeLength bounds a string attribute value, in bytes.
	MaxAttributeLength = 256
	maxAttributes      = 64
	maxEvents          = 16
	maxLinks           = 4
)

// Provider owns the tracer provider and its exporter. Shutdown flushes the spans still queued.
type Provider struct {
	sdk    *sdktrace.TracerProvider // nil when tracing is off
	tracer *Tracer
}

// New returns the provider cfg describes, with getenv reading the standard OTEL_* variables
// (nil: none), and registers the export queue's metrics on reg (nil: none). With no endpoint
// configured it returns a disabled provider whose Tracer starts nothing and registers nothing.
// The exporter connects lazily and spans leave through a bounded queue (QueueConfig): a
// collector that is down or slow delays no request, it only loses spans, which are counted.
func New(
	ctx context.Context,
	cfg Config,
	getenv func(string) string,
	log *slog.Logger,
	reg prometheus.Registerer,
) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	endpoint, on := cfg.endpoint(getenv)
	if !on {
		return &Provider{}, nil
	}
	proto := cfg.protocol(getenv)
	exp, err := newExporter(ctx, proto, endpoint, cfg.Insecure)
	if err != nil {
		return nil, fmt.Errorf("tracing: exporter: %w", err)
	}
	res, err := newResource(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	qcfg := queueConfigFromEnv(getenv)
	p, err := newProvider(cfg, exp, res, qcfg, reg, log)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, err
	}
	shown := endpoint
	if shown == "" {
		shown = "from OTEL_EXPORTER_OTLP_*"
	}
	log.Info("tracing on", "endpoint", shown, "protocol", proto, "sample_ratio", cfg.SampleRatio,
		"remote_parent", cfg.RemoteParent, "max_queue", qcfg.MaxQueue, "export_timeout", qcfg.Timeout)
	return p, nil
}

// newProvider returns the provider of cfg exporting through exp behind a bounded export queue.
func newProvider(
	cfg Config,
	exp sdktrace.SpanExporter,
	res *resource.Resource,
	qcfg QueueConfig,
	reg prometheus.Registerer,
	log *slog.Logger,
) (*Provider, error) {
	queue, err := newExportQueue(exp, qcfg, cfg.MetricNamespace, reg, log)
	if err != nil {
		return nil, err
	}
	limits := sdktrace.NewSpanLimits() // the OTEL_SPAN_* variables, then the bounds below
	limits.AttributeValueLengthLimit = bound(limits.AttributeValueLengthLimit, MaxAttributeLength)
	limits.AttributeCountLimit = bound(limits.AttributeCountLimit, maxAttributes)
	limits.EventCountLimit = bound(limits.EventCountLimit, maxEvents)
	limits.LinkCountLimit = bound(limits.LinkCountLimit, maxLinks)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(queue), // OTEL_BSP_* tune it
		sdktrace.WithResource(res),
		sdktrace.WithRawSpanLimits(limits),
		sdktrace.WithSampler(newSampler(cfg)),
	)
	tracer := NewTracer(tp, cfg.Scope)
	tracer.newRoot = cfg.RemoteParent == RemoteParentIgnore
	return &Provider{sdk: tp, tracer: tracer}, nil
}

// bound returns limit capped at max (a negative limit is unlimited).
func bound(limit, max int) int {
	if limit < 0 || limit > max {
		return max
	}
	return limit
}

// newExporter returns the OTLP exporter of proto for endpoint ("" leaves it to the
// environment variables).
func newExporter(ctx context.Context, proto, endpoint string, insecure bool) (sdktrace.SpanExporter, error) {
	if proto == ProtocolHTTP {
		return otlptracehttp.New(ctx, exporterOptions(endpoint, insecure,
			otlptracehttp.WithEndpointURL, otlptracehttp.WithEndpoint, otlptracehttp.WithInsecure)...)
	}
	return otlptracegrpc.New(ctx, exporterOptions(endpoint, insecure,
		otlptracegrpc.WithEndpointURL, otlptracegrpc.WithEndpoint, otlptracegrpc.WithInsecure)...)
}

// exporterOptions returns the options of either OTLP exporter for endpoint: a URL as is (its
// scheme says whether TLS is used), a host:port with withInsecure when insecure is set, and
// none for "" (the environment variables decide).
func exporterOptions[O any](
	endpoint string,
	insecure bool,
	withURL, withEndpoint func(string) O,
	withInsecure func() O,
) []O {
	var opts []O
	switch {
	case strings.Contains(endpoint, "://"):
		return append(opts, withURL(endpoint))
	case endpoint != "":
		opts = append(opts, withEndpoint(endpoint))
	}
	if insecure {
		opts = append(opts, withInsecure())
	}
	return opts
}

// newResource describes the process: service name and version, cluster and region, then what
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES say.
func newResource(ctx context.Context, cfg Config) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", cfg.ServiceName)}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", cfg.ServiceVersion))
	}
	if cfg.Cluster != "" {
		attrs = append(attrs, String(AttrCluster, cfg.Cluster))
	}
	if cfg.Region != "" {
		attrs = append(attrs, String(AttrRegion, cfg.Region))
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, err
	}
	return res, nil
}

// Enabled reports whether spans are exported.
func (p *Provider) Enabled() bool { return p != nil && p.sdk != nil }

// Tracer returns the provider's tracer: nil (disabled, safe to use) when tracing is off.
func (p *Provider) Tracer() *Tracer {
	if p == nil {
		return nil
	}
	return p.tracer
}

// Shutdown flushes the spans still queued to the collector, within ctx, and stops the
// exporter. Call it once the front doors have drained, so their last spans are sent.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	if err := p.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}
