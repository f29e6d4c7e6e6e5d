package app_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/app"
)

// GIE's endpoint-picker flags set our settings of the same meaning, and an explicit setting of
// both that disagrees stops the gateway naming both flags.
func TestGIEFlags(t *testing.T) {
	epc := filepath.Join(t.TempDir(), "plugins.yaml")
	if err := os.WriteFile(
		epc,
		[]byte("apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\n"),
		0o600,
	); err != nil {
		t.Fatal(err)
	}
	base := []string{"--endpoints=127.0.0.1:1", "--cluster=c"}
	pool := []string{"--pool-name=qwen"}
	with := func(args ...string) []string { return append(append([]string{}, base...), args...) }
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(app.Config) bool
		wantErr string
	}{
		// identity and the pool
		{"cluster from the pool name, no region", pool, nil, func(c app.Config) bool {
			return c.Cluster == "qwen" && c.Region == "" && c.PoolNamespace == "default"
		}, ""},
		{
			"explicit cluster over the pool name",
			append(pool, "--cluster=east-1"),
			nil,
			func(c app.Config) bool { return c.Cluster == "east-1" },
			"",
		},
		{"cluster required without a pool", []string{"--endpoints=127.0.0.1:1"}, nil, nil, "--cluster is required"},
		{"region required with gossip", with("--gossip-bind=127.0.0.1:0"), nil, nil, "--region is required with gossip"},
		{
			"namespace from NAMESPACE",
			pool,
			map[string]string{"NAMESPACE": "llm"},
			func(c app.Config) bool { return c.PoolNamespace == "llm" },
			"",
		},
		{"empty --pool-namespace is NAMESPACE", append(pool, "--pool-namespace="), map[string]string{"NAMESPACE": "llm"},
			func(c app.Config) bool { return c.PoolNamespace == "llm" }, ""},
		{"--pool-namespace over NAMESPACE", append(pool, "--pool-namespace=ml"), map[string]string{"NAMESPACE": "llm"},
			func(c app.Config) bool { return c.PoolNamespace == "ml" }, ""},
		{
			"v1 pool group",
			append(pool, "--pool-group=inference.networking.k8s.io"),
			nil,
			func(c app.Config) bool { return c.PoolName == "qwen" },
			"",
		},
		{
			"v1alpha2 pool group refused",
			append(pool, "--pool-group", "inference.networking.x-k8s.io"),
			nil,
			nil,
			"v1alpha2 InferencePool is not supported",
		},
		{"unknown pool group", append(pool, "--pool-group=example.com"), nil, nil, `--pool-group="example.com"`},
		// ports
		{"grpc port", with("--grpc-port=7002"), nil, func(c app.Config) bool { return c.ExtProcListen == ":7002" }, ""},
		{"grpc port agrees with ext-proc-listen", with("--grpc-port=7002", "--ext-proc-listen=127.0.0.1:7002"), nil,
			func(c app.Config) bool { return c.ExtProcListen == "127.0.0.1:7002" }, ""},
		{
			"grpc port disagrees",
			with("--grpc-port=7002", "--ext-proc-listen=:9002"),
			nil,
			nil,
			`--grpc-port=7002 and --ext-proc-listen=":9002" disagree`,
		},
		{
			"grpc port disagrees with the environment",
			with("--grpc-port=7002"),
			map[string]string{"SWITCHYARD_EXT_PROC_LISTEN": ":7000"},
			nil,
			`--grpc-port=7002 and --ext-proc-listen=":7000" disagree`,
		},
		{"grpc port from the environment", base, map[string]string{"SWITCHYARD_GRPC_PORT": "7003"},
			func(c app.Config) bool { return c.ExtProcListen == ":7003" }, ""},
		{"grpc port out of range", with("--grpc-port=0"), nil, nil, "--grpc-port=0: want a port"},
		{"metrics port", with("--metrics-port=9191"), nil, func(c app.Config) bool { return c.MetricsListen == ":9191" }, ""},
		{
			"metrics port disagrees",
			with("--metrics-port=9191", "--metrics-listen=127.0.0.1:9090"),
			nil,
			nil,
			"--metrics-port=9191 and --metrics-listen",
		},
		{"health port default", base, nil, func(c app.Config) bool { return c.GRPCHealthPort == 9003 }, ""},
		{"health port off", with("--grpc-health-port=0"), nil, func(c app.Config) bool { return c.GRPCHealthPort == 0 }, ""},
		{"health port out of range", with("--grpc-health-port=70000"), nil, nil, "--grpc-health-port=70000"},
		// the EndpointPickerConfig
		{"config file", with("--config-file", epc), nil, func(c app.Config) bool { return c.ConfigFile == epc }, ""},
		{
			"config file agrees with --config",
			with("--config-file="+epc, "--config="+epc),
			nil,
			func(c app.Config) bool { return c.ConfigFile == epc },
			"",
		},
		{
			"config file disagrees",
			with("--config-file="+epc, "--config=other.yaml"),
			nil,
			nil,
			"--config-file=" + epc + " and --config=other.yaml disagree",
		},
		{
			"config text",
			with("--config-text=kind: EndpointPickerConfig"),
			nil,
			func(c app.Config) bool { return c.ConfigText == "kind: EndpointPickerConfig" },
			"",
		},
		{
			"config text and file",
			with("--config-text=kind: EndpointPickerConfig", "--config-file="+epc),
			nil,
			nil,
			"--config-text are exclusive",
		},
		// scraping
		{
			"refresh interval",
			with("--refresh-metrics-interval=100ms"),
			nil,
			func(c app.Config) bool { return c.ScrapeInterval == 100*time.Millisecond },
			"",
		},
		{"refresh interval disagrees", with("--refresh-metrics-interval=100ms", "--scrape-interval=50ms"), nil, nil,
			"--refresh-metrics-interval=100ms and --scrape-interval=50ms disagree"},
		{
			"staleness threshold",
			with("--metrics-staleness-threshold=5s"),
			nil,
			func(c app.Config) bool { return c.Staleness == 5*time.Second },
			"",
		},
		{"staleness threshold disagrees", with("--metrics-staleness-threshold=5s", "--staleness=3s"), nil, nil,
			"--metrics-staleness-threshold=5s and --staleness=3s disagree"},
		{
			"triton metric specs",
			with(
				"--total-queued-requests-metric",
				"nv_trt_llm_request_metrics{request_type=waiting}",
				"--kv-cache-usage-percentage-metric",
				"nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=fraction}",
				"--lora-info-metric",
				"",
			),
			nil,
			func(c app.Config) bool {
				f := c.Families
				return f.Waiting != nil && f.Waiting.String() == "nv_trt_llm_request_metrics{request_type=waiting}" &&
					f.KVUsage != nil && f.KVUsage.Name == "nv_trt_llm_kv_cache_block_metrics" &&
					f.LoRA != nil && f.LoRA.Name == "" && len(f.LoRA.Labels) == 0 && f.Running == nil && f.CacheInfo == nil
			},
			"",
		},
		{"quoted metric spec", with(`--total-queued-requests-metric="sglang:num_queue_reqs"`), nil,
			func(c app.Config) bool {
				return c.Families.Waiting != nil && c.Families.Waiting.Name == "sglang:num_queue_reqs"
			}, ""},
		{"no metric flags: the engines' names", base, nil, func(c app.Config) bool { return c.Families.IsZero() }, ""},
		{
			"bad metric spec",
			with("--cache-info-metric=vllm:cache_config_info{block_size}"),
			nil,
			nil,
			"--cache-info-metric: metric spec",
		},
		{
			"metrics port, path, scheme",
			with("--model-server-metrics-port=8001", `--model-server-metrics-path="/prometheus/metrics"`,
				"--model-server-metrics-scheme=https", "--model-server-metrics-https-insecure-skip-verify=false"),
			nil,
			func(c app.Config) bool {
				return c.ModelServerMetricsPort == 8001 && c.ModelServerMetricsScheme == "https" && !c.ModelServerMetricsInsecure
			},
			"",
		},
		{"bad metrics scheme", with("--model-server-metrics-scheme=ftp"), nil, nil, "--model-server-metrics-scheme"},
		{"bad metrics path", with("--model-server-metrics-path=metrics"), nil, nil, "--model-server-metrics-path"},
		{"bad metrics port", with("--model-server-metrics-port=70000"), nil, nil, "--model-server-metrics-port=70000"},
		// logging
		{"zap json", with("--zap-encoder", "json"), nil, func(c app.Config) bool { return c.LogFormat == "json" }, ""},
		{"zap console", with("--zap-encoder=console"), nil, func(c app.Config) bool { return c.LogFormat == "text" }, ""},
		{
			"log format wins over zap",
			with("--zap-encoder=json", "--log-format=text"),
			nil,
			func(c app.Config) bool { return c.LogFormat == "text" },
			"",
		},
		{"bad zap encoder", with("--zap-encoder=xml"), nil, nil, "--zap-encoder"},
		{"zap level name", with("--zap-log-level=error"), nil, func(c app.Config) bool { return c.LogLevel == "error" }, ""},
		{"zap level panic", with("--zap-log-level=panic"), nil, func(c app.Config) bool { return c.LogLevel == "error" }, ""},
		{"zap verbosity 5", with("--zap-log-level=5"), nil, func(c app.Config) bool { return c.LogLevel == "debug" }, ""},
		{"zap verbosity 2", with("--zap-log-level=2"), nil, func(c app.Config) bool { return c.LogLevel == "info" }, ""},
		{
			"log level wins over zap",
			with("--zap-log-level=debug", "--log-level=warn"),
			nil,
			func(c app.Config) bool { return c.LogLevel == "warn" },
			"",
		},
		{"bad zap level", with("--zap-log-level=loud"), nil, nil, "--zap-log-level"},
		{"v 1", with("--v", "1"), nil, func(c app.Config) bool { return c.LogLevel == "info" }, ""},
		{"v 4", with("--v=4"), nil, func(c app.Config) bool { return c.LogLevel == "debug" }, ""},
		{
			"zap level wins over v",
			with("--v=4", "--zap-log-level=info"),
			nil,
			func(c app.Config) bool { return c.LogLevel == "info" },
			"",
		},
		{
			"log level wins over v",
			with("--v=4", "--log-level=error"),
			nil,
			func(c app.Config) bool { return c.LogLevel == "error" },
			"",
		},
		{"negative v", with("--v=-1"), nil, nil, "--v=-1"},
		// flags with no effect, and bool values as separate arguments
		{
			"no-effect flags",
			with(
				"--ha-enable-leader-election",
				"--tracing=false",
				"--health-checking",
				"--refresh-prometheus-metrics-interval=5s",
				"--enable-cert-reload",
				"--metrics-endpoint-auth=false",
				"--zap-devel",
				"--zap-stacktrace-level=error",
				"--zap-time-encoding=iso8601",
			),
			nil,
			func(c app.Config) bool { return c.LeaderElection && !c.Tracing },
			"",
		},
		{
			"bool value as its own argument",
			with("--enable-pprof", "false", "--secure-serving", "true", "--tracing", "false"),
			nil,
			func(c app.Config) bool { return !c.EnablePprof && c.SecureServing && !c.Tracing },
			"",
		},
		{"a string flag keeps a bool-looking value", []string{"--pool-name", "true", "--v", "1"}, nil,
			func(c app.Config) bool { return c.PoolName == "true" && c.Cluster == "true" }, ""},
		{"a stray argument is still refused", with("--enable-pprof", "maybe"), nil, nil, `unexpected argument "maybe"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := app.ParseConfig(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want mention of %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(c) {
				t.Fatalf("config %+v, err %v", c, err)
			}
		})
	}
}
