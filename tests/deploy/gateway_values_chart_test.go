package deploy_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// TestGatewayChartKVEvents renders the gateway chart with kvEvents values and checks the flags,
// the container, Service and NetworkPolicy ports: off by default; enabled, the socket binds
// ports.kvEvents, the topic check stays on unless trustTopic says otherwise, and the port admits
// the pool's namespace unless networkPolicy.kvEventsFrom names the peers.
func TestGatewayChartKVEvents(t *testing.T) {
	custom := []any{map[string]any{"podSelector": map[string]any{"matchLabels": map[string]any{"app": "vllm"}}}}
	for _, tc := range []struct {
		name      string
		vals      map[string]any
		args      []string // every --kv-events-* flag, in order
		from      string   // the namespace, or pod label app, the NetworkPolicy admits to the port
		fromIsPod bool
	}{
		{name: "defaults: off", vals: nil},
		{
			name: "enabled, topic checked",
			vals: map[string]any{"kvEvents": map[string]any{"enabled": true}},
			args: []string{"--kv-events-endpoint=tcp://*:5557", "--kv-events-trust-topic=false"},
			from: testNamespace,
		},
		{
			name: "enabled, topic trusted, own peers, pool elsewhere",
			vals: map[string]any{
				"kvEvents":      map[string]any{"enabled": true, "trustTopic": true},
				"ports":         map[string]any{"kvEvents": 6000},
				"networkPolicy": map[string]any{"kvEventsFrom": custom},
			},
			args: []string{"--kv-events-endpoint=tcp://*:6000", "--kv-events-trust-topic=true"},
			from: "vllm", fromIsPod: true,
		},
		{
			name: "pool in another namespace",
			vals: map[string]any{
				"kvEvents": map[string]any{"enabled": true},
				"pool":     map[string]any{"name": "llama", "namespace": "models"},
			},
			args: []string{"--kv-events-endpoint=tcp://*:5557", "--kv-events-trust-topic=false"},
			from: "models",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderObjects(t, "cluster-gateway", tc.vals)
			c := find(objs, "Deployment")[0].typed.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
			var got []string
			for _, a := range c.Args {
				if strings.HasPrefix(a, "--kv-events-") {
					got = append(got, a)
				}
			}
			if !slices.Equal(got, tc.args) {
				t.Fatalf("KV-events flags %q, want %q", got, tc.args)
			}
			port := int32(0)
			if len(tc.args) > 0 {
				port = 5557
				if strings.HasSuffix(tc.args[0], ":6000") {
					port = 6000
				}
			}
			checkKVEventsPorts(t, objs, c, port)
			if port != 0 {
				checkKVEventsPolicy(t, find(objs, "NetworkPolicy")[0].typed.(*networkingv1.NetworkPolicy), port,
					tc.from, tc.fromIsPod)
			}
		})
	}
}

// checkKVEventsPorts checks the container's and the Service's kv-events port: port, or none
// when port is 0.
func checkKVEventsPorts(t *testing.T, objs []object, c corev1.Container, port int32) {
	t.Helper()
	i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "kv-events" })
	switch {
	case port == 0 && i >= 0:
		t.Errorf("container port kv-events %d without kvEvents.enabled", c.Ports[i].ContainerPort)
	case port != 0 && (i < 0 || c.Ports[i].ContainerPort != port):
		t.Errorf("container ports %+v, want kv-events %d", c.Ports, port)
	}
	svc := find(objs, "Service")[0].typed.(*corev1.Service)
	j := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "kv-events" })
	switch {
	case port == 0 && j >= 0:
		t.Errorf("Service port kv-events without kvEvents.enabled")
	case port != 0 && (j < 0 || svc.Spec.Ports[j].Port != port || svc.Spec.Ports[j].TargetPort.String() != "kv-events"):
		t.Errorf("Service ports %+v, want kv-events %d", svc.Spec.Ports, port)
	}
}

// checkKVEventsPolicy checks that the NetworkPolicy admits port from the namespace (or pods
// labelled app=from) alone.
func checkKVEventsPolicy(t *testing.T, np *networkingv1.NetworkPolicy, port int32, from string, pod bool) {
	t.Helper()
	for _, rule := range np.Spec.Ingress {
		if len(rule.Ports) != 1 || rule.Ports[0].Port.IntVal != port {
			continue
		}
		if len(rule.From) != 1 {
			t.Fatalf("KV-events port admits %+v, want one peer", rule.From)
		}
		peer := rule.From[0]
		switch {
		case pod && (peer.PodSelector == nil || peer.PodSelector.MatchLabels["app"] != from):
			t.Errorf("KV-events port admits %+v, want pods app=%s", peer, from)
		case !pod && (peer.NamespaceSelector == nil || peer.PodSelector != nil ||
			peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != from):
			t.Errorf("KV-events port admits %+v, want namespace %s", peer, from)
		}
		return
	}
	t.Errorf("no NetworkPolicy rule for the KV-events port %d: %+v", port, np.Spec.Ingress)
}

// TestGatewayChartTenantLimits renders the gateway chart with tenant limits inline and from an
// existing ConfigMap and checks the flag, the ConfigMap the chart writes (the limits as given,
// "*" included, counts written as whole numbers), and the mount: the whole ConfigMap as a read-only directory (no
// subPath, so
// that an edit reaches the file the gateway re-reads).
func TestGatewayChartTenantLimits(t *testing.T) {
	limits := map[string]any{
		"acme": map[string]any{
			"requests_per_second": 20,
			"max_concurrent":      8,
			"tokens_per_minute":   1_000_000_000_000,
		},
		"*":              map[string]any{"requests_per_second": 5},
		"unlimited-team": map[string]any{},
	}
	for _, tc := range []struct {
		name      string
		vals      map[string]any
		configMap string // the ConfigMap mounted ("" for none)
		file      string // --tenant-limits-file
		written   bool   // the chart writes the ConfigMap
	}{
		{name: "defaults: off", vals: nil},
		{
			name:      "inline",
			vals:      map[string]any{"tenantLimits": map[string]any{"limits": limits}},
			configMap: "sy-cluster-gateway-tenant-limits", file: "/etc/switchyard/tenant-limits/tenant-limits.yaml",
			written: true,
		},
		{
			name:      "existing ConfigMap, own key",
			vals:      map[string]any{"tenantLimits": map[string]any{"existingConfigMap": "team-limits", "key": "limits.yaml"}},
			configMap: "team-limits", file: "/etc/switchyard/tenant-limits/limits.yaml",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderObjects(t, "cluster-gateway", tc.vals)
			spec := find(objs, "Deployment")[0].typed.(*appsv1.Deployment).Spec.Template.Spec
			if got := argValue(spec.Containers[0].Args, "tenant-limits-file"); got != tc.file {
				t.Errorf("--tenant-limits-file=%q, want %q", got, tc.file)
			}
			checkTenantLimitsMount(t, spec, tc.configMap)
			var written []*corev1.ConfigMap
			for _, o := range find(objs, "ConfigMap") {
				if cm := o.typed.(*corev1.ConfigMap); strings.HasSuffix(cm.Name, "-tenant-limits") {
					written = append(written, cm)
				}
			}
			if len(written) != btoi(tc.written) {
				t.Fatalf("%d tenant-limits ConfigMaps written, want %d", len(written), btoi(tc.written))
			}
			if !tc.written {
				return
			}
			file := written[0].Data["tenant-limits.yaml"]
			if !strings.Contains(file, "tokens_per_minute: 1000000000000\n") { // the gateway wants whole numbers
				t.Errorf("the limits file does not write the count whole:\n%s", file)
			}
			var got map[string]any
			if err := yaml.Unmarshal([]byte(file), &got); err != nil {
				t.Fatalf("the limits file: %v\n%s", err, written[0].Data["tenant-limits.yaml"])
			}
			if want := roundTrip(t, limits); !reflect.DeepEqual(got, want) {
				t.Errorf("the limits file holds %v, want %v", got, want)
			}
		})
	}
}

// checkTenantLimitsMount checks that configMap (or nothing, for "") is mounted whole at
// /etc/switchyard/tenant-limits, read-only.
func checkTenantLimitsMount(t *testing.T, spec corev1.PodSpec, configMap string) {
	t.Helper()
	vi := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "tenant-limits" })
	c := spec.Containers[0]
	mi := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "tenant-limits" })
	if configMap == "" {
		if vi >= 0 || mi >= 0 {
			t.Errorf("tenant-limits volume or mount without tenant limits")
		}
		return
	}
	if vi < 0 || spec.Volumes[vi].ConfigMap == nil || spec.Volumes[vi].ConfigMap.Name != configMap {
		t.Fatalf("volumes %+v, want tenant-limits from ConfigMap %s", spec.Volumes, configMap)
	}
	if mi < 0 {
		t.Fatalf("no tenant-limits mount: %+v", c.VolumeMounts)
	}
	if m := c.VolumeMounts[mi]; m.MountPath != "/etc/switchyard/tenant-limits" || !m.ReadOnly || m.SubPath != "" {
		t.Errorf("tenant-limits mount %+v, want the whole ConfigMap read-only at /etc/switchyard/tenant-limits", m)
	}
}

// roundTrip returns v as YAML decodes it (numbers as float64).
func roundTrip(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := yaml.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGatewayChartKVEventsAndTenantLimitsRenderFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		vals map[string]any
		want string
	}{
		{"trusted topic without the socket", map[string]any{"kvEvents": map[string]any{"trustTopic": true}},
			"kvEvents.trustTopic needs kvEvents.enabled"},
		{"limits twice", map[string]any{"tenantLimits": map[string]any{
			"limits": map[string]any{"acme": map[string]any{"max_concurrent": 1}}, "existingConfigMap": "x"}},
			"tenantLimits.limits or tenantLimits.existingConfigMap"},
		{"misspelt limit", map[string]any{"tenantLimits": map[string]any{
			"limits": map[string]any{"acme": map[string]any{"max_concurent": 1}}}}, "unknown limit"},
		{"limits not an object", map[string]any{"tenantLimits": map[string]any{
			"limits": map[string]any{"acme": 5}}}, "tenantLimits.limits.acme"},
		{"bad key", map[string]any{"tenantLimits": map[string]any{"existingConfigMap": "x", "key": "a/b"}},
			"tenantLimits.key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderChart(t, "cluster-gateway", tc.vals)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("render error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
