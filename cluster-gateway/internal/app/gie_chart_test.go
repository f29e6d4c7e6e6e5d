package app_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline/pipelinetest"
	"github.com/switchyard-dev/switchyard/contract/poll"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/app"
)

// Test data from GIE's inferencepool Helm chart (kubernetes-sigs/gateway-api-inference-extension,
// v1.3.1, Apache-2.0): the EPP container's arguments of
// config/charts/inferencepool/templates/epp-deployment.yaml and the plugins file of
// templates/epp-config.yaml, rendered for release "qwen" in namespace "llm".

// gieChartPlugins is the ConfigMap's default-plugins.yaml with the latency predictor off.
const gieChartPlugins = `apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: queue-scorer
- type: kv-cache-utilization-scorer
- type: prefix-cache-scorer
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: queue-scorer
    weight: 2
  - pluginRef: kv-cache-utilization-scorer
    weight: 2
  - pluginRef: prefix-cache-scorer
    weight: 3
`

// gieChartValues are the values a rendering varies.
type gieChartValues struct {
	triton bool // inferencePool.modelServerType: triton-tensorrt-llm
	ha     bool // inferenceExtension.replicas: 2 (leader election)
	noAuth bool // inferenceExtension.monitoring.prometheus.auth.enabled: false
	// flags are inferenceExtension.flags (the chart's default is v: 1), rendered in Helm's
	// order (sorted keys) as "--key" "value" pairs.
	flags map[string]string
}

// gieChartArgs renders the container's arguments. configDir stands for the ConfigMap's mount,
// /config in the chart.
func gieChartArgs(v gieChartValues, configDir string) []string {
	args := []string{
		"--pool-name", "qwen",
		"--pool-namespace", "llm",
		"--zap-encoder", "json",
		"--config-file", configDir + "/default-plugins.yaml",
	}
	if v.triton {
		args = append(args,
			"--total-queued-requests-metric", "nv_trt_llm_request_metrics{request_type=waiting}",
			"--kv-cache-usage-percentage-metric", "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=fraction}",
			"--lora-info-metric", "")
	}
	if v.ha {
		args = append(args, "--ha-enable-leader-election")
	}
	keys := make([]string, 0, len(v.flags))
	for k := range v.flags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, "--"+k, v.flags[k])
	}
	args = append(args, "--tracing=false")
	if v.noAuth {
		args = append(args, "--metrics-endpoint-auth=false")
	}
	return args
}

// freePort returns a loopback port free a moment ago, for the flags that take a port.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// The gateway starts with the exact arguments and environment GIE's chart gives its endpoint
// picker, follows the InferencePool through the Kubernetes API, answers ext_proc on the gRPC
// port, serves /metrics on the metrics port, and its gRPC health port turns SERVING for the
// chart's probe services once the pool's pod is ready.
func TestGIEChartArgs(t *testing.T) {
	for _, tt := range []struct {
		name   string
		values gieChartValues
		probes []string // the services the chart's liveness and readiness probes ask for
	}{
		{"vllm", gieChartValues{}, []string{"inference-extension"}},
		{"triton", gieChartValues{triton: true}, []string{"inference-extension"}},
		{"leader election", gieChartValues{ha: true, noAuth: true}, []string{"liveness", "readiness"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := newFakeVLLM(t)
			pod.triton.Store(tt.values.triton)
			kube := newFakeKube(t, "llm")
			_, podPort, _ := net.SplitHostPort(pod.addr())
			port, _ := strconv.Atoi(podPort)
			kube.setPool(&inferencev1.InferencePool{
				ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: "llm"},
				Spec: inferencev1.InferencePoolSpec{
					Selector: inferencev1.LabelSelector{
						MatchLabels: map[inferencev1.LabelKey]inferencev1.LabelValue{"app": "qwen"},
					},
					TargetPorts: []inferencev1.Port{{Number: inferencev1.PortNumber(port)}},
				},
			})
			kube.setPod(chartPod(false))

			configDir := t.TempDir()
			if err := os.WriteFile(
				filepath.Join(configDir, "default-plugins.yaml"),
				[]byte(gieChartPlugins),
				0o600,
			); err != nil {
				t.Fatal(err)
			}
			grpcPort, healthPort, metricsPort := freePort(t), freePort(t), freePort(t)
			values := tt.values
			// inferenceExtension.flags: the chart's default (v: 1) and the ports, free ones
			// instead of 9002, 9003 and 9090, and our HTTP proxy's.
			values.flags = map[string]string{
				"v":                "1",
				"grpc-port":        strconv.Itoa(grpcPort),
				"grpc-health-port": strconv.Itoa(healthPort),
				"metrics-port":     strconv.Itoa(metricsPort),
				"listen":           "127.0.0.1:" + strconv.Itoa(freePort(t)),
			}
			env := map[string]string{"NAMESPACE": "llm", "POD_NAME": "qwen-epp-0", "SWITCHYARD_KUBECONFIG": kube.kubeconfig(t)}

			logs := pipelinetest.NewLog() // the gateway's goroutines write it while the test reads
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- app.Run(ctx, gieChartArgs(values, configDir), func(k string) string { return env[k] }, logs)
			}()
			t.Cleanup(func() {
				cancel()
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("Run: %v", err)
					}
				case <-time.After(15 * time.Second):
					t.Error("gateway did not stop")
				}
			})

			health := healthClient(t, "127.0.0.1:"+strconv.Itoa(healthPort))
			poll.Until(t, waitTimeout, func() bool {
				_, err := health("liveness")
				return err == nil
			}, "the health port answers")
			for _, svc := range tt.probes {
				if svc == "liveness" {
					continue
				}
				if got, err := health(svc); err != nil || got != healthpb.HealthCheckResponse_NOT_SERVING {
					t.Fatalf("%s before the pod is ready: %v, %v; want NOT_SERVING", svc, got, err)
				}
			}
			kube.setPod(chartPod(true))
			for _, svc := range tt.probes {
				poll.Until(t, waitTimeout, func() bool {
					got, err := health(svc)
					return err == nil && got == healthpb.HealthCheckResponse_SERVING
				}, svc+" SERVING")
			}
			if err := extProcExchangeAt(
				t,
				"127.0.0.1:"+strconv.Itoa(grpcPort),
				[]string{pod.addr()},
				insecure.NewCredentials(),
			); err != nil {
				t.Fatalf("ext_proc on --grpc-port: %v", err)
			}
			metrics := get(t, "http://127.0.0.1:"+strconv.Itoa(metricsPort)+"/metrics")
			if !strings.Contains(metrics, "switchyard_gateway_requests_total") {
				t.Fatalf("/metrics on --metrics-port lacks the gateway's metrics:\n%.2000s", metrics)
			}
			checkChartLogs(t, logs.String(), tt.values)
		})
	}
}

// chartPod is the pool's model-server pod, on loopback.
func chartPod(ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "qwen-0", Namespace: "llm", Labels: map[string]string{"app": "qwen"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
}

// healthClient returns a function that checks a service on the health port.
func healthClient(t *testing.T, addr string) func(string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	client := healthpb.NewHealthClient(conn)
	return func(service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		return r.GetStatus(), err
	}
}

// checkChartLogs checks the logs are JSON (--zap-encoder json) and name the flags of no effect.
func checkChartLogs(t *testing.T, logs string, v gieChartValues) {
	t.Helper()
	var inert []string
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec struct {
			Msg   string   `json:"msg"`
			Flags []string `json:"flags"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON (--zap-encoder json): %q", line)
		}
		if rec.Msg == "accepted for GIE compatibility, no effect" {
			inert = rec.Flags
		}
	}
	want := []string{"tracing"}
	if v.ha {
		want = []string{"ha-enable-leader-election", "tracing", "metrics-endpoint-auth"}
	}
	if strings.Join(inert, ",") != strings.Join(want, ",") {
		t.Errorf("flags logged as having no effect: %q, want %q", inert, want)
	}
}
