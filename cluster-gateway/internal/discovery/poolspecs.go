package discovery

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// EngineLabel is the pod label naming the model-server engine (vllm when absent).
const EngineLabel = "inference.networking.k8s.io/engine-type"

// poolSelector converts the pool's label selector. An empty selector selects nothing: a pool
// without a selector must not sweep every pod of the namespace into it.
func poolSelector(pool *inferencev1.InferencePool) labels.Selector {
	ml := pool.Spec.Selector.MatchLabels
	if len(ml) == 0 {
		return labels.Nothing()
	}
	set := make(labels.Set, len(ml))
	for k, v := range ml {
		set[string(k)] = string(v)
	}
	return labels.SelectorFromSet(set)
}

// PoolEndpoints returns one endpoint per ready pod IP and target port of pool, among pods (which
// the caller may pass unfiltered: the pool's selector is applied here). The endpoint name is the
// pod name, suffixed with "-rank-N" for the Nth port when the pool has several target ports
// (GIE's naming); the engine comes from the pod's EngineLabel (unknown values fall back to vLLM),
// and the prefill/decode role from its roleLabel label (see roleLabels).
func PoolEndpoints(pool *inferencev1.InferencePool, pods []*corev1.Pod, roleLabel string) []datastore.EndpointSpec {
	sel := poolSelector(pool)
	var specs []datastore.EndpointSpec
	for _, pod := range pods {
		if !sel.Matches(labels.Set(pod.Labels)) || !podReady(pod) {
			continue
		}
		engine := datastore.Engine(strings.ToLower(pod.Labels[EngineLabel]))
		if engine == "" || ValidateEngine(engine) != nil {
			engine = datastore.EngineVLLM
		}
		for i, port := range pool.Spec.TargetPorts {
			if port.Number < 1 || port.Number > 65535 {
				continue
			}
			name := pod.Name
			if len(pool.Spec.TargetPorts) > 1 {
				name += "-rank-" + strconv.Itoa(i)
			}
			specs = append(specs, datastore.EndpointSpec{
				Address: net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port.Number))),
				Name:    name,
				Engine:  engine,
				Labels:  podLabels(pod.Labels, roleLabel),
			})
		}
	}
	slices.SortFunc(specs, func(a, b datastore.EndpointSpec) int { return strings.Compare(a.Address, b.Address) })
	return slices.CompactFunc(specs, func(a, b datastore.EndpointSpec) bool { return a.Address == b.Address })
}

// podLabels returns a copy of a pod's labels with its role, the value of its roleLabel label,
// as framework.RoleLabel, where the role filters read it. With a roleLabel other than
// framework.RoleLabel, a framework.RoleLabel label of the pod's own is not its role and is
// dropped; a pod without roleLabel has no role (it serves whole requests).
func podLabels(lbls map[string]string, roleLabel string) map[string]string {
	out := maps.Clone(lbls)
	if roleLabel == "" || roleLabel == framework.RoleLabel {
		return out
	}
	if out == nil {
		out = make(map[string]string, 1)
	}
	delete(out, framework.RoleLabel)
	if v, ok := lbls[roleLabel]; ok {
		out[framework.RoleLabel] = v
	}
	return out
}

// podReady reports whether pod can take traffic: it has an IP, is not being deleted, and its
// Ready condition is true.
func podReady(pod *corev1.Pod) bool {
	if pod.Status.PodIP == "" || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
