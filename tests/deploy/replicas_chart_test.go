package deploy_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// With more than one replica the gateway chart wires active-active sharing: a headless Service
// for --replica-join (not-ready addresses published, so replicas starting together find each
// other), the replica pool's port and keyring on every replica, and a NetworkPolicy rule
// admitting the pool's port from the release's own replicas; one replica, or sharing turned off,
// renders none of it.
func TestGatewayChartReplicaSharing(t *testing.T) {
	tests := []struct {
		name  string
		vals  map[string]any
		share bool
	}{
		{"defaults (2 replicas)", nil, true},
		{"3 replicas, existing keyring", map[string]any{"replicaCount": 3,
			"replicaSharing": map[string]any{"existingSecret": "gw-replica-key"}}, true},
		{"1 replica", map[string]any{"replicaCount": 1}, false},
		{"sharing off", map[string]any{"replicaCount": 3, "replicaSharing": map[string]any{"enabled": false}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := renderObjects(t, "cluster-gateway", tt.vals)
			dep := find(objs, "Deployment")[0].typed.(*appsv1.Deployment)
			pod := dep.Spec.Template.Spec
			c := pod.Containers[0]
			headless := replicaService(objs)
			wantArgs := []string{
				"--replica-bind=$(POD_IP):7947",
				"--replica-join=sy-cluster-gateway-replicas." + testNamespace + ".svc:7947",
				"--replica-key-file=/etc/switchyard/replica/replica.key",
			}
			if !tt.share {
				if headless != nil || slices.ContainsFunc(c.Args, func(a string) bool {
					return strings.HasPrefix(a, "--replica-")
				}) {
					t.Fatalf("sharing rendered: service %v, args %v", headless != nil, c.Args)
				}
				return
			}
			for _, a := range wantArgs {
				if !slices.Contains(c.Args, a) {
					t.Errorf("args %v lack %s", c.Args, a)
				}
			}
			if headless == nil {
				t.Fatal("no headless replica Service")
			}
			if headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses ||
				headless.Spec.Selector["app.kubernetes.io/name"] != dep.Spec.Selector.MatchLabels["app.kubernetes.io/name"] {
				t.Errorf("replica Service %+v: want headless, publishing not-ready pods, selecting the gateways",
					headless.Spec)
			}
			var ports []string
			for _, p := range c.Ports {
				if p.ContainerPort == 7947 {
					ports = append(ports, p.Name+"/"+string(p.Protocol))
				}
			}
			if !slices.Equal(ports, []string{"replica-tcp/TCP", "replica-udp/UDP"}) {
				t.Errorf("container ports on 7947: %v", ports)
			}
			secret := "sy-cluster-gateway-replica"
			if es, ok := tt.vals["replicaSharing"]; ok {
				secret = es.(map[string]any)["existingSecret"].(string)
			}
			if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
				return v.Secret != nil && v.Secret.SecretName == secret
			}) {
				t.Errorf("no volume of Secret %s", secret)
			}
			generated := slices.ContainsFunc(find(objs, "Secret"), func(o object) bool {
				s := o.typed.(*corev1.Secret)
				return s.Name == "sy-cluster-gateway-replica" && len(s.Data["replica.key"]) > 0
			})
			if generated != (secret == "sy-cluster-gateway-replica") {
				t.Errorf("generated keyring Secret rendered: %v, want %v", generated, !generated)
			}
			checkReplicaPolicy(t, objs, dep)
		})
	}
}

func replicaService(objs []object) *corev1.Service {
	for _, o := range find(objs, "Service") {
		if s := o.typed.(*corev1.Service); s.Name == "sy-cluster-gateway-replicas" {
			return s
		}
	}
	return nil
}

// checkReplicaPolicy checks that a NetworkPolicy, when rendered, admits the replica port (TCP and
// UDP) from the gateway's own pods only.
func checkReplicaPolicy(t *testing.T, objs []object, dep *appsv1.Deployment) {
	t.Helper()
	for _, o := range find(objs, "NetworkPolicy") {
		np := o.typed.(*networkingv1.NetworkPolicy)
		found := false
		for _, rule := range np.Spec.Ingress {
			if len(rule.Ports) == 0 || rule.Ports[0].Port == nil || rule.Ports[0].Port.IntValue() != 7947 {
				continue
			}
			found = true
			if len(rule.Ports) != 2 || len(rule.From) != 1 || rule.From[0].PodSelector == nil ||
				rule.From[0].NamespaceSelector != nil ||
				rule.From[0].PodSelector.MatchLabels["app.kubernetes.io/instance"] !=
					dep.Spec.Selector.MatchLabels["app.kubernetes.io/instance"] {
				t.Errorf("replica rule %+v: want TCP and UDP from the release's gateways only", rule)
			}
		}
		if !found {
			t.Errorf("NetworkPolicy %s does not admit the replica port", np.Name)
		}
	}
}
