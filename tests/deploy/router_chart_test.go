package deploy_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// routerValueSets are value combinations of the global-router chart that must all render.
var routerValueSets = map[string]map[string]any{
	"defaults: embedded etcd": nil,
	"external etcd, three replicas": {
		"replicaCount": 3,
		"region":       "eu-west-1",
		"etcd": map[string]any{"endpoints": []any{"https://etcd-0:2379", "https://etcd-1:2379"},
			"tls":  map[string]any{"secretName": "etcd-client-tls"},
			"auth": map[string]any{"username": "switchyard-router", "secretName": "etcd-router-password"}},
		"gossip": map[string]any{"existingSecret": "fleet-gossip", "join": []any{"10.1.0.5:7946"},
			"service": map[string]any{"type": "LoadBalancer", "annotations": map[string]any{
				"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"}}},
		"admin": map[string]any{"existingSecret": "router-admin",
			"tls": map[string]any{"secretName": "router-admin-tls", "requireClientCertificates": true}},
		"dnsListen": ":5353",
		"dnsSync": map[string]any{"enabled": true, "config": map[string]any{
			"hostedZoneID": "Z0123456789ABCDEFGHIJ",
			"recordName":   "api.example.com",
			"regions": map[string]any{
				"eu-west-1": map[string]any{"aliasDNSName": "lb.elb.amazonaws.com", "aliasHostedZoneID": "Z35SXDOTRQ7X7K"},
			},
		}},
		"serviceMonitor": map[string]any{"enabled": true},
		"gatewayTLS":     map[string]any{"secretName": "router-gateway-tls"},
	},
	"internal load balancer, existing claim": {
		"service": map[string]any{"annotations": map[string]any{
			"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"},
			"loadBalancerSourceRanges": []any{"10.0.0.0/8"}},
		"etcd": map[string]any{"persistence": map[string]any{"existingClaim": "router-data"}},
	},
	"OpenAI port over mutual TLS": {
		"tls":     map[string]any{"secretName": "router-tls", "requireClientCertificates": true},
		"service": map[string]any{"port": 443},
		// the load balancer's health check moves to the metrics port: admit its subnets there
		"networkPolicy": map[string]any{
			"healthCheckFrom": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/16"}}},
		},
	},
	"registered clusters, admin TLS": {
		"admin": map[string]any{"tls": map[string]any{"secretName": "router-admin-tls"}},
		"clusterIdentity": map[string]any{"allowCleartextGateways": true, "registrations": []any{
			map[string]any{
				"cluster":     "sy-use1",
				"region":      "us-east-1",
				"gatewayURLs": []any{"http://gateway-us-east-1.example.com:8080"},
				"publicKeys":  []any{testPublicKeyPEM},
			},
			map[string]any{
				"cluster":     "sy-euw1",
				"region":      "eu-west-1",
				"gatewayURLs": []any{"https://gateway-eu-west-1.example.com:8080"},
				"models":      []any{"llama"},
				"publicKeys":  []any{testPublicKeyPEM},
			},
		}},
		"networkPolicy": map[string]any{
			"gossipFrom": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/16"}}},
		},
	},
	"compatibility mode allowed, cleartext gateways": {
		"clusterIdentity": map[string]any{"required": false, "allowCleartextGateways": true, "maxClockSkew": "10s"},
	},
	"aggregator behind a load balancer, pass-through paths, capacity map": {
		"gossip": map[string]any{"profile": "lan", "join": []any{"sy-global-router-gossip.switchyard.svc:7946"}},
		"aggregator": map[string]any{
			"enabled":          true,
			"wanJoin":          []any{"gossip-wan-us-west-2.example.com:7947", "gossip-wan-eu-west-1.example.com:7947"},
			"wanFrom":          []any{"10.10.0.0/16", "10.20.0.0/16", "10.30.0.0/16"},
			"wanKey":           map[string]any{"key": testGossipKey},
			"regionSigningKey": map[string]any{"key": testSigningKeyPEM},
			"service": map[string]any{"type": "LoadBalancer", "annotations": map[string]any{
				"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"}},
		},
		"passthroughPaths": []any{"/tokenize=json", "/v1/rerank=json", "/v1/audio/transcriptions=multipart"},
		"capacityMap":      map[string]any{"maxStreams": 32},
	},
	"aggregator with existing secrets, no capacity map": {
		"aggregator": map[string]any{
			"enabled":          true,
			"port":             8947,
			"regionSigningKey": map[string]any{"existingSecret": "use1-region-key"},
			"wanKey":           map[string]any{"existingSecret": "wan-keyring", "secretKey": "keys"},
		},
		"passthroughPaths": []any{"none"},
		"capacityMap":      map[string]any{"enabled": false},
	},
	"OpenAI port over TLS, own health check": {
		"tls": map[string]any{"secretName": "router-tls"},
		"service": map[string]any{"annotations": map[string]any{
			"service.beta.kubernetes.io/aws-load-balancer-healthcheck-protocol": "https"}},
	},
}

func TestRouterChart(t *testing.T) {
	for name, vals := range routerValueSets {
		t.Run(name, func(t *testing.T) {
			objs := renderObjects(t, "global-router", vals)
			dep := find(objs, "Deployment")[0].typed.(*appsv1.Deployment)
			spec := dep.Spec.Template.Spec
			c := spec.Containers[0]
			checkProbes(t, c, "metrics")
			checkSecure(t, spec, c)
			args := c.Args
			embedded := argValue(args, "etcd-endpoints") == ""
			if embedded {
				if *dep.Spec.Replicas != 1 || dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
					t.Errorf("embedded etcd: replicas %d strategy %s, want 1 and Recreate", *dep.Spec.Replicas, dep.Spec.Strategy.Type)
				}
				if !mountsClaim(spec) {
					t.Error("embedded etcd without a PersistentVolumeClaim volume")
				}
			} else if mountsClaim(spec) || len(find(objs, "PersistentVolumeClaim")) != 0 {
				t.Error("external etcd but a PersistentVolumeClaim is used")
			}
			for _, f := range []string{"region", "listen", "admin-listen", "metrics-listen", "gossip-key-file",
				"admin-token-file", "data-dir"} {
				if argValue(args, f) == "" {
					t.Errorf("missing --%s in %v", f, args)
				}
			}
			if !hasDownwardPodIP(c) {
				t.Error("POD_IP is not set from status.podIP")
			}
			checkEtcdFiles(t, spec, c)
			checkClusterIdentity(t, args, vals)
			checkRouterServices(t, objs)
			checkListenTLS(t, objs, c, vals)
		})
	}
}

// checkEtcdFiles checks that every etcd TLS or password file, and every TLS file of the OpenAI
// port, the admin port or the gateways, the router is given lies in a read-only mount of a secret
// volume.
func checkEtcdFiles(t *testing.T, spec corev1.PodSpec, c corev1.Container) {
	t.Helper()
	checkSecretFiles(
		t,
		spec,
		c,
		"etcd-ca-file",
		"etcd-cert-file",
		"etcd-key-file",
		"etcd-password-file",
		"tls-cert-file",
		"tls-key-file",
		"tls-client-ca-file",
		"admin-tls-cert-file",
		"admin-tls-key-file",
		"admin-tls-client-ca-file",
		"gateway-ca-file",
		"gateway-cert-file",
		"gateway-key-file",
	)
	if argValue(c.Args, "etcd-username") != "" && argValue(c.Args, "etcd-password-file") == "" {
		t.Error("--etcd-username without --etcd-password-file")
	}
}

// checkSecretFiles checks that the file each of flags names (when given) lies in a read-only
// mount of a secret volume.
func checkSecretFiles(t *testing.T, spec corev1.PodSpec, c corev1.Container, flags ...string) {
	t.Helper()
	secrets := map[string]bool{}
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = true
		}
	}
	for _, f := range flags {
		path := argValue(c.Args, f)
		if path == "" {
			continue
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/") && m.ReadOnly && secrets[m.Name] {
				mounted = true
			}
		}
		if !mounted {
			t.Errorf("--%s=%s is not in a read-only secret mount", f, path)
		}
	}
}

// checkListenTLS checks the TLS files of --listen against the tls values, and that the load
// balancer's default health check, plain HTTP on the traffic port, moves to the metrics port when
// --listen serves TLS (and stays put otherwise, or when it is set to something else).
func checkListenTLS(t *testing.T, objs []object, c corev1.Container, vals map[string]any) {
	t.Helper()
	tls, _ := vals["tls"].(map[string]any)
	on := tls != nil && tls["secretName"] != ""
	mutual := on && tls["requireClientCertificates"] == true
	if got := argValue(c.Args, "tls-cert-file") != "" && argValue(c.Args, "tls-key-file") != ""; got != on {
		t.Errorf("TLS on %v, but args %v", on, c.Args)
	}
	if got := argValue(c.Args, "tls-client-ca-file") != ""; got != mutual {
		t.Errorf("client certificates required %v, but args %v", mutual, c.Args)
	}
	const (
		portKey  = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-port"
		protoKey = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-protocol"
	)
	for _, o := range find(objs, "Service") {
		if o.name() != "sy-global-router" {
			continue
		}
		ann := o.typed.(*corev1.Service).Annotations
		want := "traffic-port"
		if on && ann[protoKey] == "http" {
			want = "9100" // ports.metrics
		}
		if ann[portKey] != want {
			t.Errorf("load balancer health check on port %q (protocol %q), want %q", ann[portKey], ann[protoKey], want)
		}
	}
}

func mountsClaim(spec corev1.PodSpec) bool {
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			return true
		}
	}
	return false
}

func checkRouterServices(t *testing.T, objs []object) {
	t.Helper()
	byName := map[string]*corev1.Service{}
	for _, o := range find(objs, "Service") {
		byName[o.name()] = o.typed.(*corev1.Service)
	}
	public, admin, gossip := byName["sy-global-router"], byName["sy-global-router-admin"],
		byName["sy-global-router-gossip"]
	if public == nil || admin == nil || gossip == nil {
		t.Fatalf("want public, admin and gossip Services, got %v", byName)
	}
	if public.Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Errorf("public Service type %s, want LoadBalancer", public.Spec.Type)
	}
	for _, a := range []string{"service.beta.kubernetes.io/aws-load-balancer-type",
		"service.beta.kubernetes.io/aws-load-balancer-healthcheck-path"} {
		if public.Annotations[a] == "" {
			t.Errorf("public Service lacks annotation %s", a)
		}
	}
	if admin.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("admin Service type %s, want ClusterIP", admin.Spec.Type)
	}
	if !gossip.Spec.PublishNotReadyAddresses {
		t.Error("gossip Service must publish not-ready routers (they become ready only after gateways join)")
	}
}

// checkClusterIdentity checks that the chart requires cluster identity unless told otherwise and
// passes the identity flags it is given.
func checkClusterIdentity(t *testing.T, args []string, vals map[string]any) {
	t.Helper()
	ci, _ := vals["clusterIdentity"].(map[string]any)
	wantRequired := ci == nil || ci["required"] != false
	if got := argValue(args, "require-cluster-identity") == "true"; got != wantRequired {
		t.Errorf("--require-cluster-identity=true given %v, want %v: %v", got, wantRequired, args)
	}
	if got, want := argValue(
		args,
		"allow-cleartext-gateways",
	) == "true", ci != nil &&
		ci["allowCleartextGateways"] == true; got != want {
		t.Errorf("--allow-cleartext-gateways=true given %v, want %v", got, want)
	}
	if skew, _ := ci["maxClockSkew"].(string); argValue(args, "max-clock-skew") != skew {
		t.Errorf("--max-clock-skew=%q, want %q", argValue(args, "max-clock-skew"), skew)
	}
}
