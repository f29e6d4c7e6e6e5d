package deploy_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/switchyard-dev/switchyard/gossip"
)

// testGossipKey is a gossip keyring of one base64 32-byte key, for value sets only.
const testGossipKey = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

// routerSelector is the router pods' labels in the test release.
var routerSelector = map[string]string{"app.kubernetes.io/name": "global-router", "app.kubernetes.io/instance": "sy"}

// TestRouterChartAggregator renders the router chart's aggregator block and checks the flags of the
// pool of aggregators, the WAN port on the container, its seed Service and its NetworkPolicy rule,
// and that the region key and the WAN keyring are files the router can read, in read-only
// directory mounts of their Secrets (no subPath, so a replaced key reaches the watched file).
func TestRouterChartAggregator(t *testing.T) {
	_, privPEM, _ := testKeyPair(t)
	tests := []struct {
		name    string
		vals    map[string]any
		args    []string // every aggregator flag, in order; nil: off
		wanKey  string   // the Secret of --gossip-wan-key-file ("" for none)
		region  string   // the Secret of --region-signing-key-file ("" for none)
		svcType corev1.ServiceType
		wanFrom []string // addresses admitted to the WAN port besides the release's routers
	}{
		{name: "defaults: off", vals: nil},
		{
			name: "LoadBalancer seed, own keyring, region key from the values",
			vals: map[string]any{"aggregator": map[string]any{
				"enabled":          true,
				"wanJoin":          []any{"gossip-wan-us-west-2.example.com:7947", "10.30.1.2:7947"},
				"wanFrom":          []any{"10.10.0.0/16", "10.20.0.0/16"},
				"wanKey":           map[string]any{"key": testGossipKey + "\n" + strings.Repeat("B", 43) + "="},
				"regionSigningKey": map[string]any{"key": privPEM},
				"service": map[string]any{
					"type":                     "LoadBalancer",
					"annotations":              map[string]any{annScheme: "internal"},
					"loadBalancerSourceRanges": []any{"10.20.0.0/16"},
				},
			}},
			args: []string{
				"--gossip-aggregator=true", "--gossip-wan-bind=0.0.0.0:7947", "--gossip-wan-advertise=$(POD_IP):7947",
				"--gossip-wan-join=gossip-wan-us-west-2.example.com:7947,10.30.1.2:7947",
				"--gossip-wan-key-file=/etc/switchyard/gossip-wan/gossip-wan.key",
				"--region-signing-key-file=/etc/switchyard/region-signing/region.key",
			},
			wanKey:  "sy-global-router-gossip-wan",
			region:  "sy-global-router-region-signing",
			svcType: corev1.ServiceTypeLoadBalancer,
			wanFrom: []string{"10.10.3.4", "10.20.3.4"},
		},
		{
			name: "existing region key, the region pool's keyring, fixed address, NodePort",
			vals: map[string]any{"aggregator": map[string]any{
				"enabled":          true,
				"port":             8947,
				"advertise":        "aggr-use1.example.com:8947",
				"regionSigningKey": map[string]any{"existingSecret": "use1-region-key", "secretKey": "key.pem"},
				"service":          map[string]any{"type": "NodePort"},
			}},
			args: []string{
				"--gossip-aggregator=true", "--gossip-wan-bind=0.0.0.0:8947",
				"--gossip-wan-advertise=aggr-use1.example.com:8947",
				"--region-signing-key-file=/etc/switchyard/region-signing/key.pem",
			},
			region:  "use1-region-key",
			svcType: corev1.ServiceTypeNodePort,
		},
		{
			name: "compatibility mode: unsigned digests, headless seed",
			vals: map[string]any{
				"clusterIdentity": map[string]any{"required": false},
				"aggregator":      map[string]any{"enabled": true},
			},
			args: []string{
				"--gossip-aggregator=true",
				"--gossip-wan-bind=0.0.0.0:7947",
				"--gossip-wan-advertise=$(POD_IP):7947",
			},
			svcType: corev1.ServiceTypeClusterIP,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := renderObjects(t, "global-router", tt.vals)
			dep := find(objs, "Deployment")[0].typed.(*appsv1.Deployment)
			spec := dep.Spec.Template.Spec
			c := spec.Containers[0]
			var got []string
			for _, a := range c.Args {
				if strings.HasPrefix(a, "--gossip-aggregator") || strings.HasPrefix(a, "--gossip-wan-") ||
					strings.HasPrefix(a, "--region-signing-") {
					got = append(got, a)
				}
			}
			if !slices.Equal(got, tt.args) {
				t.Errorf("aggregator flags %q, want %q", got, tt.args)
			}
			port := int32(0)
			if tt.args != nil {
				_, p, _ := strings.Cut(argValue(c.Args, "gossip-wan-bind"), ":")
				n, err := strconv.Atoi(p)
				if err != nil {
					t.Fatalf("--gossip-wan-bind port %q: %v", p, err)
				}
				port = int32(n)
			}
			checkWANPorts(t, c, port)
			checkAggregatorService(t, objs, port, tt.svcType, tt.vals)
			checkWANPolicy(t, networkPolicy(t, objs), port, tt.wanFrom)
			checkKeyFile(t, objs, spec, c, "gossip-wan-key-file", tt.wanKey, func(path string) error {
				_, err := gossip.LoadKeyFile(path)
				return err
			})
			checkKeyFile(t, objs, spec, c, "region-signing-key-file", tt.region, func(path string) error {
				_, err := gossip.LoadSigningKeyFile(path)
				return err
			})
		})
	}
}

// checkWANPorts wants the container's wan-tcp and wan-udp ports on port, or none when port is 0.
func checkWANPorts(t *testing.T, c corev1.Container, port int32) {
	t.Helper()
	var got []string
	for _, p := range c.Ports {
		if strings.HasPrefix(p.Name, "wan-") {
			if p.ContainerPort != port {
				t.Errorf("container port %s on %d, want %d", p.Name, p.ContainerPort, port)
			}
			got = append(got, p.Name+"/"+string(p.Protocol))
		}
	}
	want := []string{"wan-tcp/TCP", "wan-udp/UDP"}
	if port == 0 {
		want = nil
	}
	if !slices.Equal(got, want) {
		t.Errorf("WAN container ports %v, want %v", got, want)
	}
}

// checkAggregatorService wants the aggregator seed Service, of type typ, selecting the routers and
// listing not-ready ones, with the WAN port in TCP and UDP (headless when ClusterIP); none when port
// is 0.
func checkAggregatorService(t *testing.T, objs []object, port int32, typ corev1.ServiceType, vals map[string]any) {
	t.Helper()
	var svc *corev1.Service
	for _, o := range find(objs, "Service") {
		if o.name() == "sy-global-router-aggregator" {
			svc = o.typed.(*corev1.Service)
		}
	}
	if port == 0 {
		if svc != nil {
			t.Error("an aggregator Service without aggregator.enabled")
		}
		return
	}
	if svc == nil {
		t.Fatal("no Service sy-global-router-aggregator")
	}
	if svc.Spec.Type != typ || (typ == corev1.ServiceTypeClusterIP) != (svc.Spec.ClusterIP == corev1.ClusterIPNone) {
		t.Errorf("aggregator Service %s (clusterIP %q), want %s, headless when ClusterIP", svc.Spec.Type,
			svc.Spec.ClusterIP, typ)
	}
	if !svc.Spec.PublishNotReadyAddresses || !selects(svc.Spec.Selector, routerSelector) {
		t.Errorf("aggregator Service selects %v, publishes not-ready %v", svc.Spec.Selector,
			svc.Spec.PublishNotReadyAddresses)
	}
	var ports []string
	for _, p := range svc.Spec.Ports {
		if p.Port != port || p.TargetPort.StrVal != p.Name {
			t.Errorf("aggregator Service port %s: %d → %s, want %d → %s", p.Name, p.Port, p.TargetPort.String(), port, p.Name)
		}
		ports = append(ports, p.Name+"/"+string(p.Protocol))
	}
	if !slices.Equal(ports, []string{"wan-tcp/TCP", "wan-udp/UDP"}) {
		t.Errorf("aggregator Service ports %v", ports)
	}
	want, _ := valueAt(vals, "aggregator", "service", "annotations").(map[string]any)
	for k, v := range want {
		if svc.Annotations[k] != v {
			t.Errorf("aggregator Service annotation %s=%q, want %q", k, svc.Annotations[k], v)
		}
	}
	ranges, _ := valueAt(vals, "aggregator", "service", "loadBalancerSourceRanges").([]any)
	if len(svc.Spec.LoadBalancerSourceRanges) != len(ranges) {
		t.Errorf("aggregator Service source ranges %v, want %v", svc.Spec.LoadBalancerSourceRanges, ranges)
	}
}

// checkWANPolicy checks the NetworkPolicy admits the WAN port (port; 0: off) in TCP and UDP
// from this release's routers and the addresses of from only: not from other addresses, nor from
// other Switchyard pods (gateways belong to the region pool, not to the pool of aggregators).
func checkWANPolicy(t *testing.T, np *networkingv1.NetworkPolicy, port int32, from []string) {
	t.Helper()
	gateway := peer{namespace: map[string]string{"kubernetes.io/metadata.name": testNamespace},
		podLabel: map[string]string{"app.kubernetes.io/part-of": "switchyard", "app.kubernetes.io/name": "cluster-gateway"}}
	router := peer{namespace: gateway.namespace, podLabel: routerSelector}
	if port == 0 {
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				if p.Port != nil && p.Port.IntVal == 7947 {
					t.Error("the NetworkPolicy opens 7947 without aggregator.enabled")
				}
			}
		}
		return
	}
	if !admits(np, port, router) {
		t.Error("the WAN port does not admit the region's other aggregator (this release's routers)")
	}
	if admits(np, port, gateway) || admits(np, port, peer{ip: "192.0.2.1"}) {
		t.Error("the WAN port admits a gateway pod or an address outside aggregator.wanFrom")
	}
	for _, ip := range from {
		if !admits(np, port, peer{ip: ip}) {
			t.Errorf("the WAN port does not admit %s (aggregator.wanFrom)", ip)
		}
	}
	udp := false
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port != nil && p.Port.IntVal == port && p.Protocol != nil && *p.Protocol == corev1.ProtocolUDP {
				udp = true
			}
		}
	}
	if !udp {
		t.Error("the WAN port is not admitted over UDP (memberlist probes)")
	}
}

// checkKeyFile checks the file flag names (want: the Secret holding it, "" for no flag) lies in a
// read-only directory mount of that Secret, and that the chart's Secret of that name, when the
// chart renders it, holds a file read accepts.
func checkKeyFile(
	t *testing.T,
	objs []object,
	spec corev1.PodSpec,
	c corev1.Container,
	flag, want string,
	read func(path string) error,
) {
	t.Helper()
	file := argValue(c.Args, flag)
	if want == "" {
		if file != "" {
			t.Errorf("--%s=%s, want none", flag, file)
		}
		return
	}
	if file == "" {
		t.Fatalf("no --%s", flag)
	}
	vol, key := mountedFile(t, spec, c, file)
	if vol.Secret == nil || vol.Secret.SecretName != want || len(vol.Secret.Items) != 0 {
		t.Fatalf("--%s is in volume %+v, want the whole Secret %s", flag, vol.VolumeSource, want)
	}
	for _, m := range c.VolumeMounts {
		if m.Name == vol.Name && m.SubPath != "" {
			t.Errorf("--%s: mount %s uses subPath %s: a replaced key would never reach the file", flag, m.Name, m.SubPath)
		}
	}
	for _, o := range find(objs, "Secret") {
		if o.name() != want {
			continue
		}
		data, ok := o.typed.(*corev1.Secret).Data[key]
		if !ok {
			t.Fatalf("Secret %s has no key %s", want, key)
		}
		path := filepath.Join(t.TempDir(), key)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := read(path); err != nil {
			t.Errorf("--%s: the router cannot read Secret %s: %v", flag, want, err)
		}
	}
}

// TestChartsAggregatorAndPathsRenderFailures checks the charts refuse aggregator, pass-through
// and capacity-map values the binaries would refuse or that cannot work, with a message naming the
// value.
func TestChartsAggregatorAndPathsRenderFailures(t *testing.T) {
	agg := func(a map[string]any) map[string]any {
		out := map[string]any{"enabled": true, "regionSigningKey": map[string]any{"key": testSigningKeyPEM}}
		for k, v := range a {
			out[k] = v
		}
		return map[string]any{"aggregator": out}
	}
	tests := []struct {
		chart, name string
		vals        map[string]any
		want        string
	}{
		{
			"global-router", "aggregator without a region key while identity is required",
			map[string]any{"aggregator": map[string]any{"enabled": true}},
			"every router refuses unsigned region digests",
		},
		{
			"global-router", "region key without the aggregator",
			map[string]any{"aggregator": map[string]any{"regionSigningKey": map[string]any{"key": testSigningKeyPEM}}},
			"set aggregator.enabled=true",
		},
		{
			"global-router", "WAN seeds without the aggregator",
			map[string]any{"aggregator": map[string]any{"wanJoin": []any{"a:7947"}}},
			"set aggregator.enabled=true",
		},
		{"global-router", "WAN port on the gossip port", agg(map[string]any{"port": 7946}), "is ports.gossip too"},
		{"global-router", "WAN port on the admin port", agg(map[string]any{"port": 9090}), "is ports.admin too"},
		{"global-router", "WAN port out of range", agg(map[string]any{"port": 70000}), "must be a port number"},
		{
			"global-router", "WAN seeds the NetworkPolicy shuts out",
			agg(map[string]any{"wanJoin": []any{"gossip-wan-us-west-2.example.com:7947"}}),
			"set aggregator.wanFrom",
		},
		{
			"global-router", "WAN seed without a port",
			agg(map[string]any{"wanJoin": []any{"gossip-wan-us-west-2.example.com"}, "wanFrom": []any{"10.20.0.0/16"}}),
			"must be host:port",
		},
		{"global-router", "WAN peer not a CIDR", agg(map[string]any{"wanFrom": []any{"10.20.0.0"}}), "must be a CIDR"},
		{
			"global-router", "one advertised address for two aggregators",
			map[string]any{
				"replicaCount": 2, "etcd": map[string]any{"endpoints": []any{"https://etcd:2379"}},
				"aggregator": agg(map[string]any{"advertise": "aggr.example.com:7947"})["aggregator"],
			},
			"aggregator.advertise is one address",
		},
		{
			"global-router", "region key not a key",
			agg(map[string]any{"regionSigningKey": map[string]any{"key": "secret"}}),
			"aggregator.regionSigningKey.key must be a PEM PRIVATE KEY",
		},
		{
			"global-router", "region key given twice",
			agg(map[string]any{"regionSigningKey": map[string]any{"key": testSigningKeyPEM, "existingSecret": "k"}}),
			"not both",
		},
		{
			"global-router", "WAN keyring not base64 keys",
			agg(map[string]any{"wanKey": map[string]any{"key": "hunter2"}}),
			"aggregator.wanKey.key must hold base64-encoded 32-byte keys",
		},
		{
			"global-router", "unknown service type",
			agg(map[string]any{"service": map[string]any{"type": "ExternalName"}}),
			"aggregator.service.type",
		},
		{"global-router", "negative capacity map streams", map[string]any{"capacityMap": map[string]any{"maxStreams": -1}},
			"capacityMap.maxStreams"},
	}
	for _, chart := range charts {
		tests = append(tests, []struct {
			chart, name string
			vals        map[string]any
			want        string
		}{
			{chart, "pass-through paths as a string", map[string]any{"passthroughPaths": "/tokenize=json"}, "must be a list"},
			{chart, "pass-through path without a source", map[string]any{"passthroughPaths": []any{"/tokenize"}},
				"must be PATH=json or PATH=multipart"},
			{chart, "pass-through path with an unknown source", map[string]any{"passthroughPaths": []any{"/x=form"}},
				"must be PATH=json or PATH=multipart"},
			{chart, "pass-through path twice", map[string]any{"passthroughPaths": []any{"/x=json", "/x=multipart"}},
				"/x is listed twice"},
			{chart, "none beside paths", map[string]any{"passthroughPaths": []any{"none", "/x=json"}}, "none stands alone"},
		}...)
	}
	for _, tt := range tests {
		t.Run(tt.chart+"/"+tt.name, func(t *testing.T) {
			_, err := renderChart(t, tt.chart, tt.vals)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("render error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestChartsPassthroughAndCapacityMap checks the pass-through list reaches both binaries as
// --passthrough-paths only when given (the binaries' default list otherwise), and the capacity
// map's values reach the router's flags only when they differ from its defaults.
func TestChartsPassthroughAndCapacityMap(t *testing.T) {
	for _, chart := range charts {
		for _, tc := range []struct {
			name string
			vals map[string]any
			want []string // the --passthrough-paths and --capacity-map* flags
		}{
			{"defaults", nil, nil},
			{
				"two paths",
				map[string]any{"passthroughPaths": []any{"/tokenize=json", "/v1/audio/transcriptions=multipart"}},
				[]string{"--passthrough-paths=/tokenize=json,/v1/audio/transcriptions=multipart"},
			},
			{"none", map[string]any{"passthroughPaths": []any{"none"}}, []string{"--passthrough-paths=none"}},
		} {
			t.Run(chart+"/"+tc.name, func(t *testing.T) {
				checkFlagPrefixes(t, renderObjects(t, chart, tc.vals), tc.want, "--passthrough-paths", "--capacity-map")
			})
		}
	}
	for _, tc := range []struct {
		name string
		vals map[string]any
		want []string
	}{
		{"capacity map streams", map[string]any{"capacityMap": map[string]any{"maxStreams": 4}},
			[]string{"--capacity-map-max-streams=4"}},
		{"capacity map off", map[string]any{"capacityMap": map[string]any{"enabled": false, "maxStreams": 4}},
			[]string{"--capacity-map=false"}},
	} {
		t.Run("global-router/"+tc.name, func(t *testing.T) {
			checkFlagPrefixes(t, renderObjects(t, "global-router", tc.vals), tc.want, "--capacity-map")
		})
	}
}

// checkFlagPrefixes wants the container's arguments with one of prefixes to be want, in order.
func checkFlagPrefixes(t *testing.T, objs []object, want []string, prefixes ...string) {
	t.Helper()
	c := find(objs, "Deployment")[0].typed.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
	var got []string
	for _, a := range c.Args {
		for _, p := range prefixes {
			if strings.HasPrefix(a, p) {
				got = append(got, a)
				break
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("flags %q, want %q", got, want)
	}
}
