package deploy_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// gatewayValueSets are value combinations of the cluster-gateway chart that must all render.
var gatewayValueSets = map[string]map[string]any{
	"defaults": nil,
	"static endpoints, picker config, monitoring": {
		"pool":      map[string]any{"name": ""},
		"endpoints": []any{"10.0.0.11:8000", "10.0.0.12:8000"},
		"endpointPickerConfig": map[string]any{
			"apiVersion": "inference.networking.x-k8s.io/v1alpha1",
			"kind":       "EndpointPickerConfig",
			"plugins":    []any{map[string]any{"type": "queue-scorer"}, map[string]any{"type": "max-score-picker"}},
			"schedulingProfiles": []any{map[string]any{"name": "default", "plugins": []any{
				map[string]any{"pluginRef": "queue-scorer", "weight": 1}, map[string]any{"pluginRef": "max-score-picker"}}}},
		},
		"adapterMap":      map[string]any{"sql-lora": "meta-llama/Llama-3.1-8B-Instruct"},
		"serviceMonitor":  map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
		"podAntiAffinity": "hard",
		"gossip": map[string]any{"existingSecret": "fleet-gossip",
			"join":           []any{"sy-global-router-gossip.switchyard.svc:7946"},
			"summarySigning": map[string]any{"existingSecret": "c1-summary-signing"}},
		"extraArgs":    []any{"--queue-limit=2048"},
		"tls":          map[string]any{"secretName": "gw-tls", "requireClientCertificates": true},
		"advertiseURL": "https://gw.use1.example.com:8080",
		"extProc":      map[string]any{"secureServing": true, "certSecretName": "epp-tls"},
	},
	"autoscaling with KEDA": {
		"autoscaling": map[string]any{"keda": map[string]any{"enabled": true, "targets": []any{
			map[string]any{"deployment": "llama-8b", "model": "meta-llama/Llama-3.1-8B-Instruct"}}}},
	},
	"signed summaries, cleartext name": {
		"gossip":       map[string]any{"summarySigning": map[string]any{"key": testSigningKeyPEM}},
		"advertiseURL": "http://gateway-us-east-1.example.com:8080",
		"networkPolicy": map[string]any{
			"gossipFrom": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.20.0.0/16"}}},
		},
	},
	"KV events, tenant limits from a ConfigMap, tracing": {
		"kvEvents":     map[string]any{"enabled": true, "trustTopic": true},
		"tenantLimits": map[string]any{"existingConfigMap": "team-limits"},
		"tracing":      map[string]any{"otlpEndpoint": "c:4317", "insecure": true, "remoteParent": "ratio"},
	},
	"pass-through paths of the pool": {
		"passthroughPaths": []any{"/tokenize=json", "/detokenize=json", "/v1/audio/translations=multipart"},
	},
	"standalone, other pool namespace": {
		"gossip":          map[string]any{"enabled": false},
		"pool":            map[string]any{"name": "llama", "namespace": "models"},
		"profile":         "gie-default",
		"replicaCount":    3,
		"podAntiAffinity": "",
		"serviceAccount": map[string]any{
			"name":        "epp",
			"annotations": map[string]any{"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/epp"},
		},
		"extProc": map[string]any{"secureServing": true},
	},
}

func TestGatewayChart(t *testing.T) {
	for name, vals := range gatewayValueSets {
		t.Run(name, func(t *testing.T) {
			objs := renderObjects(t, "cluster-gateway", vals)
			dep := find(objs, "Deployment")[0].typed.(*appsv1.Deployment)
			checkGatewayDeployment(t, dep, vals)
			checkGatewayService(t, find(objs, "Service")[0].typed.(*corev1.Service), vals)
			checkGatewayRBAC(t, objs, dep, vals)
			if pdbs := find(objs, "PodDisruptionBudget"); len(pdbs) != 1 ||
				pdbs[0].typed.(*policyv1.PodDisruptionBudget).Spec.MinAvailable.IntValue() != 1 {
				t.Errorf("want a PodDisruptionBudget with minAvailable 1, got %v", pdbs)
			}
			args := dep.Spec.Template.Spec.Containers[0].Args
			if hasConfig := vals["endpointPickerConfig"] != nil; hasConfig != (len(find(objs, "ConfigMap")) == 1) {
				t.Errorf("ConfigMap present = %v, want %v", !hasConfig, hasConfig)
			} else if hasConfig && (!slices.Contains(args, "--config=/etc/switchyard/epp/config.yaml") ||
				argValue(args, "profile") != "") {
				t.Errorf("a picker config must replace --profile: %v", args)
			} else if hasConfig && dep.Spec.Template.Annotations["checksum/epp-config"] == "" {
				t.Error("pods do not restart when the picker config changes (no checksum annotation)")
			}
			checkGatewayTLS(t, dep, vals)
			gossipOn := vals["gossip"] == nil || vals["gossip"].(map[string]any)["enabled"] != false
			ownSecret := gossipOn && (vals["gossip"] == nil || vals["gossip"].(map[string]any)["existingSecret"] == nil)
			ownSigning := gossipOn && valueAt(vals, "gossip", "summarySigning", "key") != nil
			secrets := map[string]bool{}
			for _, o := range find(objs, "Secret") {
				secrets[o.name()] = true
			}
			delete(secrets, "sy-cluster-gateway-replica") // TestGatewayChartReplicaSharing checks it
			if got := secrets["sy-cluster-gateway-gossip"]; got != ownSecret {
				t.Errorf("gossip Secret rendered = %v, want %v", got, ownSecret)
			}
			if got := secrets["sy-cluster-gateway-signing"]; got != ownSigning ||
				len(secrets) != btoi(ownSecret)+btoi(ownSigning) {
				t.Errorf("Secrets %v, want the signing Secret %v", secrets, ownSigning)
			}
		})
	}
}

// extProcSecure reports whether vals turn on TLS on the ext_proc port.
func extProcSecure(vals map[string]any) bool {
	ep, _ := vals["extProc"].(map[string]any)
	return ep != nil && ep["secureServing"] == true
}

// checkGatewayTLS checks that the TLS files the gateway is given lie in a read-only secret mount,
// that a gateway serving TLS advertises an https:// URL, and that the ext_proc port serves TLS
// (--secure-serving) as the values say, from the certificate Secret's read-only mount when one is
// given (--cert-path).
func checkGatewayTLS(t *testing.T, dep *appsv1.Deployment, vals map[string]any) {
	t.Helper()
	spec := dep.Spec.Template.Spec
	c := spec.Containers[0]
	if got := argValue(c.Args, "secure-serving") == "true"; got != extProcSecure(vals) {
		t.Errorf("--secure-serving = %v, want %v: %v", got, extProcSecure(vals), c.Args)
	}
	ep, _ := vals["extProc"].(map[string]any)
	wantSecret, _ := ep["certSecretName"].(string)
	if path := argValue(c.Args, "cert-path"); (path != "") != (wantSecret != "") {
		t.Errorf("--cert-path=%q with certSecretName %q", path, wantSecret)
	} else if path != "" {
		mounted := false
		for _, m := range c.VolumeMounts {
			for _, v := range spec.Volumes {
				if v.Name == m.Name && v.Secret != nil && v.Secret.SecretName == wantSecret && m.MountPath == path && m.ReadOnly {
					mounted = true
				}
			}
		}
		if !mounted {
			t.Errorf("--cert-path=%s is not the read-only mount of Secret %s", path, wantSecret)
		}
	}
	checkSecretFiles(t, spec, c, "tls-cert-file", "tls-key-file", "tls-client-ca-file", "summary-signing-key-file")
	g, _ := vals["gossip"].(map[string]any)
	signing, _ := g["summarySigning"].(map[string]any)
	if want := signing["existingSecret"] != nil && signing["existingSecret"] != "" ||
		signing["key"] != nil && signing["key"] != ""; (argValue(c.Args, "summary-signing-key-file") != "") != want {
		t.Errorf("--summary-signing-key-file given %v, want %v", argValue(c.Args, "summary-signing-key-file") != "", want)
	}
	if tls, _ := vals["tls"].(map[string]any); tls != nil && tls["secretName"] != "" {
		if argValue(c.Args, "tls-cert-file") == "" || !strings.HasPrefix(argValue(c.Args, "advertise-url"), "https://") {
			t.Errorf("TLS on, but args %v", c.Args)
		}
	} else if argValue(c.Args, "tls-cert-file") != "" {
		t.Errorf("TLS off, but args %v", c.Args)
	}
}

func checkGatewayDeployment(t *testing.T, dep *appsv1.Deployment, vals map[string]any) {
	t.Helper()
	spec := dep.Spec.Template.Spec
	want := int32(2)
	if n, ok := vals["replicaCount"].(int); ok {
		want = int32(n)
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != want {
		t.Errorf("replicas = %v, want %d", dep.Spec.Replicas, want)
	}
	if aa, _ := vals["podAntiAffinity"].(string); aa != "" || vals["podAntiAffinity"] == nil {
		if spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil {
			t.Error("no pod anti-affinity")
		}
	}
	c := spec.Containers[0]
	checkProbes(t, c, "metrics")
	checkSecure(t, spec, c)
	args := c.Args
	for _, f := range []string{"cluster", "region", "listen", "ext-proc-listen", "metrics-listen"} {
		if argValue(args, f) == "" {
			t.Errorf("missing --%s in %v", f, args)
		}
	}
	if (argValue(args, "pool-name") == "") == (argValue(args, "endpoints") == "") {
		t.Errorf("want exactly one of --pool-name and --endpoints: %v", args)
	}
	if argValue(args, "gossip-bind") != "" {
		advertised, _ := vals["advertiseURL"].(string) // an explicit URL replaces the pod IP
		if !strings.HasPrefix(argValue(args, "gossip-bind"), "$(POD_IP):") ||
			(advertised == "" && !strings.Contains(argValue(args, "advertise-url"), "$(POD_IP)")) ||
			(advertised != "" && argValue(args, "advertise-url") != advertised) {
			t.Errorf("gossip must bind the pod IP and advertise it or advertiseURL: %v", args)
		}
		if !hasDownwardPodIP(c) {
			t.Error("POD_IP is not set from status.podIP")
		}
	}
}

// checkGatewayService checks the Service's ports; the ext_proc port is marked HTTP/2 cleartext
// unless it serves TLS.
func checkGatewayService(t *testing.T, svc *corev1.Service, vals map[string]any) {
	t.Helper()
	want := map[string]int32{"http": 8080, "grpc-ext-proc": 9002, "metrics": 9090}
	if kv, _ := vals["kvEvents"].(map[string]any); kv["enabled"] == true {
		want["kv-events"] = 5557
	}
	secure := extProcSecure(vals)
	for _, p := range svc.Spec.Ports {
		if want[p.Name] != p.Port {
			t.Errorf("service port %s = %d, want %d", p.Name, p.Port, want[p.Name])
		}
		if p.Name == "grpc-ext-proc" && !secure && (p.AppProtocol == nil || *p.AppProtocol != "kubernetes.io/h2c") {
			t.Errorf("ext_proc port appProtocol = %v, want kubernetes.io/h2c", p.AppProtocol)
		}
		if p.Name == "grpc-ext-proc" && secure && p.AppProtocol != nil {
			t.Errorf("ext_proc port serves TLS, but appProtocol = %v", *p.AppProtocol)
		}
		delete(want, p.Name)
	}
	if len(want) > 0 {
		t.Errorf("service lacks ports %v", want)
	}
}

func checkGatewayRBAC(t *testing.T, objs []object, dep *appsv1.Deployment, vals map[string]any) {
	t.Helper()
	roles := find(objs, "Role")
	if argValue(dep.Spec.Template.Spec.Containers[0].Args, "pool-name") == "" {
		if len(roles) != 0 {
			t.Error("static endpoints need no Role")
		}
		return
	}
	if len(roles) != 1 || len(find(objs, "RoleBinding")) != 1 {
		t.Fatalf("want one Role and RoleBinding, got %d, %d", len(roles), len(find(objs, "RoleBinding")))
	}
	role := roles[0].typed.(*rbacv1.Role)
	ns := argValue(dep.Spec.Template.Spec.Containers[0].Args, "pool-namespace")
	if role.Namespace != ns {
		t.Errorf("Role in %q, pool in %q", role.Namespace, ns)
	}
	granted := map[string]bool{}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if slices.Contains(r.Verbs, "watch") && slices.Contains(r.Verbs, "list") {
					granted[g+"/"+res] = true
				}
			}
		}
	}
	for _, need := range []string{"/pods", "inference.networking.k8s.io/inferencepools"} {
		if !granted[need] {
			t.Errorf("Role does not grant list/watch on %s", need)
		}
	}
	rb := find(objs, "RoleBinding")[0].typed.(*rbacv1.RoleBinding)
	if rb.Subjects[0].Name != dep.Spec.Template.Spec.ServiceAccountName || rb.RoleRef.Name != role.Name {
		t.Errorf(
			"RoleBinding %v does not bind the pods' ServiceAccount %q to the Role",
			rb,
			dep.Spec.Template.Spec.ServiceAccountName,
		)
	}
}

// checkProbes wants liveness on /healthz and readiness on /readyz of the named port.
func checkProbes(t *testing.T, c corev1.Container, port string) {
	t.Helper()
	for name, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port.String() != port {
			t.Errorf("want a probe on %s of port %s, got %+v", name, port, p)
		}
	}
}

// checkSecure wants a non-root, read-only, unprivileged container with resources.
func checkSecure(t *testing.T, spec corev1.PodSpec, c corev1.Container) {
	t.Helper()
	psc, sc := spec.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("pod does not run as non-root")
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("container root filesystem is writable or privilege escalation allowed")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Error("container has no resource requests")
	}
}

func hasDownwardPodIP(c corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == "POD_IP" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "status.podIP" {
			return true
		}
	}
	return false
}

// argValue returns the value of --name=value in args, or "".
func argValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// testSigningKeyPEM is an Ed25519 key as Terraform's tls_private_key private_key_pem_pkcs8 writes
// it, and testPublicKeyPEM its public key (public_key_pem); for value sets only.
const (
	testSigningKeyPEM = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIOtrnj603rmPEkYUZq+PfQuGjmYKC6N9WdAKa0L05iEH\n" +
		"-----END PRIVATE KEY-----\n"
	testPublicKeyPEM = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAEP09ObEdzYU4LPkc/7n0FfRWnQjGrsYZmLPgFhiRFgA=\n" +
		"-----END PUBLIC KEY-----\n"
)
