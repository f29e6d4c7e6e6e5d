package deploy_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestGatewayChartAutoscaling: the signal's values reach the gateway's flags, and with KEDA on
// each target gets a ScaledObject whose query is the gateway's desired replicas for its model at
// a target average value of 1.
func TestGatewayChartAutoscaling(t *testing.T) {
	vals := map[string]any{
		"autoscaling": map[string]any{
			"signal": map[string]any{"interval": "10s", "targetKVUtilization": 0.8, "targetTTFT": "1500ms"},
			"keda": map[string]any{
				"enabled": true,
				"targets": []any{
					map[string]any{"deployment": "llama-8b", "model": "meta-llama/Llama-3.1-8B-Instruct",
						"maxReplicas": 6},
					map[string]any{"deployment": "qwen", "model": "Qwen/Qwen2.5-7B", "minReplicas": 2},
				},
			},
		},
	}
	objs := renderObjects(t, "cluster-gateway", vals)
	args := find(objs, "Deployment")[0].typed.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--autoscale-interval=10s", "--autoscale-target-kv=0.8",
		"--autoscale-target-queue=2", "--autoscale-target-ttft=1500ms", "--autoscale-scale-down-window=5m"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
	scaled := find(objs, "ScaledObject")
	if len(scaled) != 2 {
		t.Fatalf("%d ScaledObjects, want 2", len(scaled))
	}
	for i, want := range []struct {
		deployment, model string
		min, max          int64
	}{{"llama-8b", "meta-llama/Llama-3.1-8B-Instruct", 1, 6}, {"qwen", "Qwen/Qwen2.5-7B", 2, 10}} {
		o := scaled[i].raw.Object
		spec := o["spec"].(map[string]any)
		if spec["scaleTargetRef"].(map[string]any)["name"] != want.deployment ||
			spec["minReplicaCount"] != want.min || spec["maxReplicaCount"] != want.max {
			t.Errorf("ScaledObject %d: %v, want %s in [%d, %d]", i, spec, want.deployment, want.min, want.max)
		}
		trig := spec["triggers"].([]any)[0].(map[string]any)
		meta := trig["metadata"].(map[string]any)
		query, _ := meta["query"].(string)
		if trig["type"] != "prometheus" || trig["metricType"] != "AverageValue" || meta["threshold"] != "1" ||
			!strings.Contains(query, `switchyard_gateway_desired_replicas{namespace="`+testNamespace+`",model="`+
				want.model+`"}`) || !strings.HasPrefix(query, "max(") {
			t.Errorf("ScaledObject %d trigger %v, want the max of the gateway's desired replicas for %s at 1", i,
				trig, want.model)
		}
	}
	if got := find(renderObjects(t, "cluster-gateway", nil), "ScaledObject"); len(got) != 0 {
		t.Errorf("ScaledObjects rendered by default: %d", len(got))
	}
}

func TestGatewayChartAutoscalingRenderFailures(t *testing.T) {
	for name, tt := range map[string]struct {
		keda map[string]any
		want string
	}{
		"no targets": {map[string]any{"enabled": true}, "needs autoscaling.keda.targets"},
		"target without model": {map[string]any{"enabled": true, "targets": []any{
			map[string]any{"deployment": "x"}}}, "each needs deployment and model"},
		"model breaking the query": {map[string]any{"enabled": true, "targets": []any{
			map[string]any{"deployment": "x", "model": `a"}) or vector(99`}}}, "letters, digits"},
		"max below min": {map[string]any{"enabled": true, "targets": []any{
			map[string]any{"deployment": "x", "model": "m", "minReplicas": 5, "maxReplicas": 2}}}, "maxReplicas below"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := renderChart(t, "cluster-gateway", map[string]any{"autoscaling": map[string]any{"keda": tt.keda}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want one containing %q", err, tt.want)
			}
		})
	}
}
