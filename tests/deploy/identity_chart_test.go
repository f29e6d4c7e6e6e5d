package deploy_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"

	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/switchyard-dev/switchyard/gossip"
)

// testKeyPair returns an Ed25519 key pair as Terraform's tls_private_key writes it:
// private_key_pem_pkcs8 (PEM "PRIVATE KEY", PKCS #8) and public_key_pem (PEM "PUBLIC KEY", PKIX).
func testKeyPair(t *testing.T) (priv ed25519.PrivateKey, privPEM, pubPEM string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pkix, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return priv, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkix}))
}

// mountedFile returns the volume and the key inside it that a container reads at file: the
// mount holding file, and the file's path below the mount.
func mountedFile(t *testing.T, spec corev1.PodSpec, c corev1.Container, file string) (corev1.Volume, string) {
	t.Helper()
	for _, m := range c.VolumeMounts {
		dir := strings.TrimSuffix(m.MountPath, "/") + "/"
		if rest, ok := strings.CutPrefix(file, dir); ok {
			if !m.ReadOnly {
				t.Errorf("%s is in a writable mount", file)
			}
			for _, v := range spec.Volumes {
				if v.Name == m.Name {
					return v, rest
				}
			}
			t.Fatalf("mount %s has no volume", m.Name)
		}
	}
	t.Fatalf("%s: %s is in no mount of %v", c.Name, file, c.VolumeMounts)
	return corev1.Volume{}, ""
}

// TestGatewayChartSigningKey checks gossip.summarySigning.key: the chart stores the key in its own
// Secret and the gateway reads that Secret's file at --summary-signing-key-file, where the
// gateway's parser finds the same key, for both formats it accepts; an existing Secret is mounted
// instead, and without either the summaries go unsigned.
func TestGatewayChartSigningKey(t *testing.T) {
	priv, privPEM, _ := testKeyPair(t)
	seed := base64.StdEncoding.EncodeToString(priv.Seed())
	for _, tc := range []struct{ name, key string }{{"PKCS #8 PEM", privPEM}, {"base64 seed", seed + "\n"}} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderObjects(t, "cluster-gateway", map[string]any{
				"gossip": map[string]any{
					"summarySigning": map[string]any{"key": tc.key},
				},
				"advertiseURL": "http://gw.example.com:8080",
			})
			dep := find(objs, "Deployment")[0].typed.(*appsv1.Deployment)
			spec, c := dep.Spec.Template.Spec, dep.Spec.Template.Spec.Containers[0]
			file := argValue(c.Args, "summary-signing-key-file")
			if file == "" {
				t.Fatalf("no --summary-signing-key-file in %v", c.Args)
			}
			vol, key := mountedFile(t, spec, c, file)
			if vol.Secret == nil || vol.Secret.SecretName != "sy-cluster-gateway-signing" {
				t.Fatalf("--summary-signing-key-file=%s is in volume %+v, want the Secret sy-cluster-gateway-signing", file, vol)
			}
			var secret *corev1.Secret
			for _, o := range find(objs, "Secret") {
				if o.name() == vol.Secret.SecretName {
					secret = o.typed.(*corev1.Secret)
				}
			}
			if secret == nil {
				t.Fatalf("Secret %s is not rendered", vol.Secret.SecretName)
			}
			got, err := gossip.ParseSigningKey(secret.Data[key])
			if err != nil || !got.Equal(priv) {
				t.Fatalf(
					"the gateway reads %q from %s/%s: key %v, err %v",
					secret.Data[key],
					secret.Name,
					key,
					got.Equal(priv),
					err,
				)
			}
		})
	}
	t.Run("existing Secret", func(t *testing.T) {
		objs := renderObjects(t, "cluster-gateway", map[string]any{
			"gossip": map[string]any{"summarySigning": map[string]any{"existingSecret": "c1-signing", "secretKey": "key.pem"}}})
		dep := find(objs, "Deployment")[0].typed.(*appsv1.Deployment)
		c := dep.Spec.Template.Spec.Containers[0]
		vol, key := mountedFile(t, dep.Spec.Template.Spec, c, argValue(c.Args, "summary-signing-key-file"))
		if vol.Secret == nil || vol.Secret.SecretName != "c1-signing" || key != "key.pem" {
			t.Errorf("reads %s from %+v, want key.pem of the Secret c1-signing", key, vol)
		}
		for _, o := range find(objs, "Secret") {
			if strings.HasSuffix(o.name(), "-signing") {
				t.Errorf("the chart renders its own signing Secret %s beside an existing one", o.name())
			}
		}
	})
	t.Run("unsigned", func(t *testing.T) {
		dep := find(renderObjects(t, "cluster-gateway", nil), "Deployment")[0].typed.(*appsv1.Deployment)
		if f := argValue(dep.Spec.Template.Spec.Containers[0].Args, "summary-signing-key-file"); f != "" {
			t.Errorf("--summary-signing-key-file=%s with no key", f)
		}
	})
	for _, tc := range []struct {
		name string
		vals map[string]any
		want string
	}{
		{"key and existing Secret", map[string]any{"summarySigning": map[string]any{"key": privPEM, "existingSecret": "s"}}, "not both"},
		{"not a key", map[string]any{"summarySigning": map[string]any{"key": "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----"}}, "PEM PRIVATE KEY block (PKCS #8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := renderChart(
				t,
				"cluster-gateway",
				map[string]any{"gossip": tc.vals},
			); err == nil ||
				!strings.Contains(err.Error(), tc.want) {
				t.Fatalf("render error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// testRegistrations are two clusters as the router chart takes them: one with two keys (a
// rotation) and models, one with a cleartext URL.
func testRegistrations(t *testing.T) ([]any, []string) {
	t.Helper()
	var pubs []string
	for range 3 {
		_, _, pub := testKeyPair(t)
		pubs = append(pubs, pub)
	}
	return []any{
		map[string]any{
			"cluster":     "sy-use1",
			"region":      "us-east-1",
			"gatewayURLs": []any{"https://gateway-us-east-1.example.com:8080"},
			"models":      []any{"meta-llama/Llama-3.1-8B-Instruct", "sql-lora"},
			"publicKeys":  []any{pubs[0], pubs[1]},
		},
		map[string]any{
			"cluster":     "sy-usw2",
			"region":      "us-west-2",
			"gatewayURLs": []any{"http://gateway-us-west-2.example.com:8080"},
			"publicKeys":  []any{pubs[2]},
		},
	}, pubs
}

// registrationJob returns the rendered registration Job and the ConfigMap of public keys, or nils.
func registrationJob(t *testing.T, objs []object) (*batchv1.Job, *corev1.ConfigMap) {
	t.Helper()
	var job *batchv1.Job
	var keys *corev1.ConfigMap
	for _, o := range find(objs, "Job") {
		job = o.typed.(*batchv1.Job)
	}
	for _, o := range find(objs, "ConfigMap") {
		if o.name() == "sy-global-router-registrations" {
			keys = o.typed.(*corev1.ConfigMap)
		}
	}
	return job, keys
}

// TestRouterChartRegistrationJob checks clusterIdentity.registrations: a post-install and
// post-upgrade hook Job runs `switchyardctl register-cluster --replace` once per cluster with its
// region, URLs, models and public keys (read from a ConfigMap it mounts), against this release's
// admin Service with the admin token (and the admin port's TLS files), from pods no router
// Service selects; no Job without registrations.
func TestRouterChartRegistrationJob(t *testing.T) {
	regs, pubs := testRegistrations(t)
	for _, tc := range []struct {
		name  string
		admin map[string]any
		addr  string
		tls   []string // TLS flags of the Job
	}{
		{"plain admin port", nil, "http://sy-global-router-admin.switchyard.svc:9090", nil},
		{"admin TLS", map[string]any{"tls": map[string]any{"secretName": "router-admin-tls"}},
			"https://sy-global-router-admin.switchyard.svc:9090", []string{"ca-file"}},
		{"admin mutual TLS", map[string]any{"tls": map[string]any{"secretName": "router-admin-tls", "requireClientCertificates": true}},
			"https://sy-global-router-admin.switchyard.svc:9090", []string{"ca-file", "cert-file", "key-file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := map[string]any{"clusterIdentity": map[string]any{"registrations": regs, "allowCleartextGateways": true,
				"registrar": map[string]any{"clientCertSecretName": "registrar-tls"}}}
			if tc.admin != nil {
				vals["admin"] = tc.admin
			}
			objs := renderObjects(t, "global-router", vals)
			job, keys := registrationJob(t, objs)
			if job == nil || keys == nil {
				t.Fatalf("Job %v, key ConfigMap %v", job != nil, keys != nil)
			}
			if hook := job.Annotations["helm.sh/hook"]; hook != "post-install,post-upgrade" {
				t.Errorf("helm.sh/hook = %q, want post-install,post-upgrade", hook)
			}
			if !strings.Contains(job.Annotations["helm.sh/hook-delete-policy"], "before-hook-creation") {
				t.Errorf(
					"hook-delete-policy = %q: a second upgrade could not create the Job again",
					job.Annotations["helm.sh/hook-delete-policy"],
				)
			}
			spec := job.Spec.Template.Spec
			if len(spec.Containers) != len(regs) {
				t.Fatalf("%d containers, want one per registration (%d)", len(spec.Containers), len(regs))
			}
			checkNotSelectedByRouterServices(t, objs, job.Spec.Template.Labels)
			for i, c := range spec.Containers {
				reg := regs[i].(map[string]any)
				checkSecure(t, spec, c)
				checkRegisterArgs(t, c, reg)
				if got := argValue(c.Args, "addr"); got != tc.addr {
					t.Errorf("--addr=%s, want %s", got, tc.addr)
				}
				for _, f := range []string{"ca-file", "cert-file", "key-file"} {
					if got := argValue(c.Args, f) != ""; got != slices.Contains(tc.tls, f) {
						t.Errorf("--%s given %v, want %v", f, got, !got)
					}
				}
				checkSecretFiles(t, spec, c, "token-file", "ca-file", "cert-file", "key-file")
				if vol, _ := mountedFile(
					t,
					spec,
					c,
					argValue(c.Args, "token-file"),
				); vol.Secret.SecretName != "sy-global-router-admin" {
					t.Errorf("token from Secret %s, want the admin Secret", vol.Secret.SecretName)
				}
				if slices.Contains(tc.tls, "cert-file") {
					if vol, _ := mountedFile(t, spec, c, argValue(c.Args, "cert-file")); vol.Secret.SecretName != "registrar-tls" {
						t.Errorf("client certificate from Secret %s, want registrar-tls", vol.Secret.SecretName)
					}
				}
				// Each key file is a ConfigMap key holding the registered public key.
				files := strings.Split(argValue(c.Args, "public-key-file"), ",")
				want := reg["publicKeys"].([]any)
				if len(files) != len(want) {
					t.Fatalf("--public-key-file=%v, want %d files", files, len(want))
				}
				for j, f := range files {
					vol, key := mountedFile(t, spec, c, f)
					if vol.ConfigMap == nil || vol.ConfigMap.Name != keys.Name {
						t.Fatalf("%s is not in the key ConfigMap", f)
					}
					if strings.TrimSpace(keys.Data[key]) != strings.TrimSpace(want[j].(string)) {
						t.Errorf("%s holds %q, want the registration's key %d", f, keys.Data[key], j)
					}
					if _, err := gossip.ParsePublicKey([]byte(keys.Data[key])); err != nil {
						t.Errorf("%s: %v", f, err)
					}
				}
			}
		})
	}
	if len(pubs) != 3 {
		t.Fatal("want three keys")
	}
	if job, keys := registrationJob(t, renderObjects(t, "global-router", nil)); job != nil || keys != nil {
		t.Error("a registration Job or ConfigMap without registrations")
	}
}

// checkRegisterArgs checks a Job container runs `register-cluster CLUSTER --replace` with the
// registration's region, URLs and models.
func checkRegisterArgs(t *testing.T, c corev1.Container, reg map[string]any) {
	t.Helper()
	if len(c.Command) != 0 {
		t.Errorf("command %v overrides the image's entrypoint (switchyardctl)", c.Command)
	}
	cmd := slices.Index(c.Args, "register-cluster")
	if cmd < 0 || cmd+1 >= len(c.Args) || c.Args[cmd+1] != reg["cluster"] {
		t.Fatalf("args %v do not register %s", c.Args, reg["cluster"])
	}
	if !slices.Contains(c.Args, "--replace") || argValue(c.Args, "revision") != "" {
		t.Errorf("args %v: want --replace (idempotent) and no --revision", c.Args)
	}
	join := func(v any) string {
		var s []string
		for _, x := range v.([]any) {
			s = append(s, x.(string))
		}
		return strings.Join(s, ",")
	}
	models := ""
	if m, ok := reg["models"]; ok {
		models = join(m)
	}
	for flag, want := range map[string]string{"region": reg["region"].(string), "gateway-urls": join(reg["gatewayURLs"]), "models": models} {
		if got := argValue(c.Args, flag); got != want {
			t.Errorf("--%s=%q, want %q", flag, got, want)
		}
	}
}

// checkNotSelectedByRouterServices fails when a router Service would send traffic to the Job's pods.
func checkNotSelectedByRouterServices(t *testing.T, objs []object, labels map[string]string) {
	t.Helper()
	for _, o := range find(objs, "Service") {
		sel := o.typed.(*corev1.Service).Spec.Selector
		matches := len(sel) > 0
		for k, v := range sel {
			if labels[k] != v {
				matches = false
			}
		}
		if matches {
			t.Errorf("Service %s selects the registration Job's pods (%v)", o.name(), labels)
		}
	}
}

// TestRouterChartRegistrationFailures checks the chart refuses registrations the routers would.
func TestRouterChartRegistrationFailures(t *testing.T) {
	_, _, pub := testKeyPair(t)
	reg := func(kv ...any) map[string]any {
		r := map[string]any{
			"cluster":     "c1",
			"region":      "us-east-1",
			"gatewayURLs": []any{"https://gw.example.com:8080"},
			"publicKeys":  []any{pub},
		}
		for i := 0; i < len(kv); i += 2 {
			r[kv[i].(string)] = kv[i+1]
		}
		return r
	}
	tests := []struct {
		name string
		vals map[string]any
		want string
	}{
		{"no key", map[string]any{"registrations": []any{reg("publicKeys", []any{})}}, "publicKeys needs"},
		{"no URL", map[string]any{"registrations": []any{reg("gatewayURLs", []any{})}}, "gatewayURLs needs"},
		{
			"URL with a path",
			map[string]any{"registrations": []any{reg("gatewayURLs", []any{"https://gw.example.com/v1"})}},
			"not a base URL",
		},
		{
			"cleartext URL",
			map[string]any{"registrations": []any{reg("gatewayURLs", []any{"http://gw.example.com:8080"})}},
			"allowCleartextGateways",
		},
		{"twice", map[string]any{"registrations": []any{reg(), reg()}}, "listed twice"},
		{"bad name", map[string]any{"registrations": []any{reg("cluster", "c 1")}}, ".cluster must be"},
		{"no region", map[string]any{"registrations": []any{reg("region", "")}}, ".region must be"},
		{"model with a comma", map[string]any{"registrations": []any{reg("models", []any{"a,b"})}}, "comma"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderChart(t, "global-router", map[string]any{"clusterIdentity": tt.vals})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("render error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	_, err := renderChart(
		t,
		"global-router",
		map[string]any{"clusterIdentity": map[string]any{"registrations": []any{reg()}},
			"admin": map[string]any{"tls": map[string]any{"secretName": "a", "requireClientCertificates": true}}},
	)
	if err == nil || !strings.Contains(err.Error(), "registrar.clientCertSecretName") {
		t.Fatalf("admin mutual TLS without a client certificate for the Job: %v", err)
	}
}
