package deploy_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestChartsTracing renders both charts with tracing values set and checks that the collector,
// protocol, TLS choice, sample ratio and remote-parent mode (by default ignore for the router,
// the internet edge, and respect for the gateway behind it) reach the container's flags and the
// headers Secret its environment; with the defaults (no endpoint) no tracing flag or variable is
// rendered; and a protocol, ratio or mode the binaries would refuse fails the render.
func TestChartsTracing(t *testing.T) {
	defaultRemoteParent := map[string]string{"cluster-gateway": "respect", "global-router": "ignore"}
	for _, chart := range charts {
		for _, tc := range []struct {
			name    string
			tracing map[string]any
			args    []string // every --otlp-*/--trace-* flag, in order
			secret  string   // the Secret of OTEL_EXPORTER_OTLP_HEADERS ("" for none)
		}{
			{"defaults: off", nil, nil, ""},
			{"headers secret without an endpoint", map[string]any{"headersSecret": "otlp-headers"}, nil, ""},
			{
				"gRPC to an in-cluster collector",
				map[string]any{"otlpEndpoint": "otel-collector.observability:4317", "insecure": true, "sampleRatio": 0.1},
				[]string{
					"--otlp-endpoint=otel-collector.observability:4317", "--otlp-protocol=grpc",
					"--otlp-insecure=true", "--trace-sample-ratio=0.1", "--trace-remote-parent=" + defaultRemoteParent[chart],
				},
				"",
			},
			{
				"OTLP/HTTP URL with an API key",
				map[string]any{
					"otlpEndpoint": "https://otlp.example.com:4318/v1/traces", "protocol": "http",
					"sampleRatio": 0.25, "headersSecret": "otlp-headers",
				},
				[]string{
					"--otlp-endpoint=https://otlp.example.com:4318/v1/traces", "--otlp-protocol=http",
					"--otlp-insecure=false", "--trace-sample-ratio=0.25", "--trace-remote-parent=" + defaultRemoteParent[chart],
				},
				"otlp-headers",
			},
			{
				"remote parents sampled by the ratio",
				map[string]any{"otlpEndpoint": "c:4317", "insecure": true, "sampleRatio": 0.5, "remoteParent": "ratio"},
				[]string{
					"--otlp-endpoint=c:4317", "--otlp-protocol=grpc", "--otlp-insecure=true",
					"--trace-sample-ratio=0.5", "--trace-remote-parent=ratio",
				},
				"",
			},
		} {
			t.Run(chart+"/"+tc.name, func(t *testing.T) {
				var vals map[string]any
				if tc.tracing != nil {
					vals = map[string]any{"tracing": tc.tracing}
				}
				objs := renderObjects(t, chart, vals)
				c := find(objs, "Deployment")[0].typed.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
				var got []string
				for _, a := range c.Args {
					if strings.HasPrefix(a, "--otlp-") || strings.HasPrefix(a, "--trace-") {
						got = append(got, a)
					}
				}
				if !slices.Equal(got, tc.args) {
					t.Errorf("tracing flags %q, want %q", got, tc.args)
				}
				checkHeadersSecret(t, c, tc.secret)
			})
		}
	}
}

// checkHeadersSecret checks that OTEL_EXPORTER_OTLP_HEADERS comes from key "headers" of secret,
// or is absent when secret is "".
func checkHeadersSecret(t *testing.T, c corev1.Container, secret string) {
	t.Helper()
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "OTEL_EXPORTER_OTLP_HEADERS" })
	switch {
	case secret == "" && i >= 0:
		t.Errorf("OTEL_EXPORTER_OTLP_HEADERS set without a collector or Secret: %+v", c.Env[i])
	case secret == "":
	case i < 0:
		t.Errorf("no OTEL_EXPORTER_OTLP_HEADERS from Secret %s", secret)
	case c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.SecretKeyRef == nil ||
		c.Env[i].ValueFrom.SecretKeyRef.Name != secret || c.Env[i].ValueFrom.SecretKeyRef.Key != "headers":
		t.Errorf("OTEL_EXPORTER_OTLP_HEADERS = %+v, want key headers of Secret %s", c.Env[i], secret)
	}
}

func TestChartsTracingRenderFailures(t *testing.T) {
	for _, chart := range charts {
		for _, tc := range []struct {
			name    string
			tracing map[string]any
			want    string
		}{
			{"unknown protocol", map[string]any{"otlpEndpoint": "c:4317", "protocol": "udp"}, "tracing.protocol"},
			{"ratio above 1", map[string]any{"otlpEndpoint": "c:4317", "sampleRatio": 2}, "tracing.sampleRatio"},
			{"negative ratio", map[string]any{"otlpEndpoint": "c:4317", "sampleRatio": -0.5}, "tracing.sampleRatio"},
			{"unknown remote parent", map[string]any{"otlpEndpoint": "c:4317", "remoteParent": "trust"}, "tracing.remoteParent"},
		} {
			t.Run(chart+"/"+tc.name, func(t *testing.T) {
				_, err := renderChart(t, chart, map[string]any{"tracing": tc.tracing})
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("render error %v, want one naming %s", err, tc.want)
				}
			})
		}
	}
}
