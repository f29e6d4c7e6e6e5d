package deploy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/switchyard-dev/switchyard/gossip"
)

// refersTo reports whether expr refers to the dotted name, e.g. "tls_private_key.signing.public_key_pem".
func refersTo(expr hcl.Expression, name string) bool {
	for _, tr := range expr.Variables() {
		var parts []string
		for _, step := range tr {
			switch s := step.(type) {
			case hcl.TraverseRoot:
				parts = append(parts, s.Name)
			case hcl.TraverseAttr:
				parts = append(parts, s.Name)
			}
		}
		if strings.HasPrefix(strings.Join(parts, ".")+".", name+".") {
			return true
		}
	}
	return false
}

// TestTerraformRegionSigningKey checks the region module generates one Ed25519 key for its
// cluster and hands its private half to the gateway release (as a sensitive value, which the
// gateway chart turns into the Secret behind --summary-signing-key-file) and its public half to
// the cluster_registration output.
func TestTerraformRegionSigningKey(t *testing.T) {
	m := loadTFModule(t, "modules", "region")
	var keys []*hclsyntax.Block
	for _, b := range m.blocks {
		if b.Type == "resource" && b.Labels[0] == "tls_private_key" && b.Labels[1] != "region_signing" {
			keys = append(keys, b)
		}
	}
	if len(keys) != 1 {
		t.Fatalf("%d tls_private_key resources besides the region key, want one: the cluster's signing key", len(keys))
	}
	for _, meta := range []string{"count", "for_each"} {
		if _, ok := keys[0].Body.Attributes[meta]; ok {
			t.Errorf("tls_private_key.%s has %s: one key per cluster, the region module's", keys[0].Labels[1], meta)
		}
	}
	e, err := evalModule(
		t,
		m,
		tfvars(t, regionBaseVars+`gateway_advertise_url = "http://gateway-us-east-1.example.com:8080"`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if alg := e.attr(t, "tls_private_key", "signing", "algorithm", nil); alg.AsString() != "ED25519" {
		t.Errorf("algorithm = %s, want ED25519", alg.AsString())
	}

	// The private key reaches the gateway chart's gossip.summarySigning.key, PKCS #8 PEM.
	set := e.block(t, "resource", "helm_release", "gateway").Body.Attributes["set_sensitive"]
	if set == nil {
		t.Fatal("helm_release.gateway has no set_sensitive")
	}
	sv := e.attr(t, "helm_release", "gateway", "set_sensitive", nil)
	found := false
	for it := sv.ElementIterator(); it.Next(); {
		_, el := it.Element()
		if el.GetAttr("name").AsString() == "gossip.summarySigning.key" {
			found = el.GetAttr("type").AsString() == "string"
		}
	}
	if !found || !refersTo(set.Expr, "tls_private_key.signing.private_key_pem_pkcs8") {
		t.Errorf(
			"set_sensitive %#v does not set gossip.summarySigning.key (type string) from "+
				"tls_private_key.signing.private_key_pem_pkcs8",
			sv,
		)
	}
	_, privPEM, _ := testKeyPair(t)
	vals := helmValues(t, e, "gateway")
	vals["gossip"].(map[string]any)["summarySigning"] = map[string]any{"key": privPEM}
	objs := renderObjects(t, "cluster-gateway", vals)
	dep := find(objs, "Deployment")[0].typed.(*appsv1.Deployment)
	c := dep.Spec.Template.Spec.Containers[0]
	vol, key := mountedFile(t, dep.Spec.Template.Spec, c, argValue(c.Args, "summary-signing-key-file"))
	for _, o := range find(objs, "Secret") {
		if vol.Secret != nil && o.name() == vol.Secret.SecretName {
			if _, err := gossip.ParseSigningKey(o.typed.(*corev1.Secret).Data[key]); err != nil {
				t.Errorf("signing key Secret: %v", err)
			}
		}
	}
	if got := argValue(c.Args, "advertise-url"); got != "http://gateway-us-east-1.example.com:8080" {
		t.Errorf("--advertise-url=%s, want gateway_advertise_url", got)
	}
	if got := valueAt(vals, "proxyService", "enabled"); got != true {
		t.Errorf("proxyService.enabled = %v: the advertised name needs the gateways' load balancer", got)
	}

	// The registration carries the advertised URL and the public key.
	reg := e.output(t, "cluster_registration")
	if reg.IsNull() ||
		!reg.GetAttr("gateway_urls").
			Equals(cty.TupleVal([]cty.Value{cty.StringVal("http://gateway-us-east-1.example.com:8080")})).
			True() ||
		reg.GetAttr("cluster").AsString() != "sy-use1" ||
		reg.GetAttr("region").AsString() != "us-east-1" {
		t.Errorf("cluster_registration = %#v", reg)
	}
	for _, b := range m.blocks {
		if b.Type == "output" && b.Labels[0] == "cluster_registration" &&
			!refersTo(b.Body.Attributes["value"].Expr, "tls_private_key.signing.public_key_pem") {
			t.Error("cluster_registration does not carry tls_private_key.signing.public_key_pem")
		}
	}
	// Pod addresses cannot be registered.
	e, err = evalModule(t, m, tfvars(t, regionBaseVars))
	if err != nil {
		t.Fatal(err)
	}
	if reg := e.output(t, "cluster_registration"); !reg.IsNull() {
		t.Errorf("cluster_registration = %#v for gateways advertising their pod addresses, want null", reg)
	}
}

// TestTerraformRegionRegistrations checks cluster_registrations reach the router chart, which then
// renders the registration Job with them, requires cluster identity and allows the cleartext
// URL registered; with none, the routers stay in compatibility mode unless told otherwise.
func TestTerraformRegionRegistrations(t *testing.T) {
	m := loadTFModule(t, "modules", "region")
	tests := []struct {
		name, vars string
		required   bool
		cleartext  bool
		jobs       int
	}{
		{"none", ``, false, false, 0},
		{"none, required", `require_cluster_identity = true`, true, false, 0},
		{"two clusters", testRegistrationVars, true, true, 2},
		{"two clusters, compatibility forced", testRegistrationVars + `require_cluster_identity = false`, false, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := evalModule(t, m, tfvars(t, regionBaseVars+tt.vars))
			if err != nil {
				t.Fatal(err)
			}
			vals := helmValues(t, e, "router")
			objs := renderObjects(t, "global-router", vals)
			dep := find(objs, "Deployment")[0].typed.(*appsv1.Deployment)
			args := dep.Spec.Template.Spec.Containers[0].Args
			if got := argValue(args, "require-cluster-identity") == "true"; got != tt.required {
				t.Errorf("--require-cluster-identity given %v, want %v", got, tt.required)
			}
			if got := argValue(args, "allow-cleartext-gateways") == "true"; got != tt.cleartext {
				t.Errorf("--allow-cleartext-gateways given %v, want %v", got, tt.cleartext)
			}
			job, _ := registrationJob(t, objs)
			if n := 0; job != nil {
				n = len(job.Spec.Template.Spec.Containers)
				if n != tt.jobs {
					t.Errorf("Job registers %d clusters, want %d", n, tt.jobs)
				}
				regs := valueAt(vals, "clusterIdentity", "registrations").([]any)
				for i, c := range job.Spec.Template.Spec.Containers {
					checkRegisterArgs(t, c, regs[i].(map[string]any))
				}
			} else if tt.jobs != 0 {
				t.Errorf("no registration Job, want one for %d clusters", tt.jobs)
			}
		})
	}
}

// TestTerraformGossipFrom checks the region module opens the gossip ports to the other regions'
// VPCs only: the gateways' to the peers, the routers' also to this VPC, from which their internal
// gossip load balancer connects.
func TestTerraformGossipFrom(t *testing.T) {
	e, err := evalModule(t, loadTFModule(t, "modules", "region"), tfvars(t, regionBaseVars))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		release, chart string
		want           []string
	}{
		{"gateway", "cluster-gateway", []string{"10.20.0.0/16", "10.30.0.0/16"}},
		{"router", "global-router", []string{"10.10.0.0/16", "10.20.0.0/16", "10.30.0.0/16"}},
	} {
		t.Run(tc.release, func(t *testing.T) {
			objs := renderObjects(t, tc.chart, helmValues(t, e, tc.release))
			np := find(objs, "NetworkPolicy")[0].typed.(*networkingv1.NetworkPolicy)
			var cidrs []string
			gossipRules := 0
			for _, rule := range np.Spec.Ingress {
				if len(rule.Ports) == 0 || rule.Ports[0].Port.IntVal != 7946 {
					continue
				}
				gossipRules++
				selects := false
				for _, peer := range rule.From {
					if peer.IPBlock != nil {
						cidrs = append(cidrs, peer.IPBlock.CIDR)
					}
					if peer.PodSelector != nil && peer.PodSelector.MatchLabels["app.kubernetes.io/part-of"] == "switchyard" {
						selects = true
					}
				}
				if !selects {
					t.Error("the gossip rule no longer admits this cluster's Switchyard pods")
				}
			}
			if gossipRules != 1 || !slices.Equal(cidrs, tc.want) {
				t.Errorf("%d gossip rules admitting %v, want one admitting %v", gossipRules, cidrs, tc.want)
			}
		})
	}
}

// exampleLocal returns the expression of one of the example's locals.
func exampleLocal(t *testing.T, m *tfModule, name string) hcl.Expression {
	t.Helper()
	for _, b := range m.blocks {
		if a, ok := b.Body.Attributes[name]; ok && b.Type == "locals" {
			return a.Expr
		}
	}
	t.Fatalf("%s has no local %s", m.dir, name)
	return nil
}

// TestTerraformExampleRegistersEveryCluster checks the example registers every region's cluster
// with every region's routers: each region module call gets the list built from all three
// modules' cluster_registration outputs (three clusters, three keys), gateways without TLS
// advertise the cleartext name the global module keeps a record for, and cluster_identity=false
// turns all of it off.
func TestTerraformExampleRegistersEveryCluster(t *testing.T) {
	m := loadTFModule(t, "examples", "multi-region")
	const base = "zone_id = \"Z0123456789ABCDEFGHIJ\"\nrecord_name = \"api.example.com\"\n"
	var regions []string
	for _, b := range m.blocks {
		if b.Type != "module" || !strings.HasSuffix(m.callSource(b), "modules/region") {
			continue
		}
		regions = append(regions, b.Labels[0])
		if a := b.Body.Attributes["cluster_registrations"]; a == nil || !refersTo(a.Expr, "local.cluster_registrations") {
			t.Errorf("module %s does not get local.cluster_registrations", b.Labels[0])
		}
		if a := b.Body.Attributes["gateway_advertise_url"]; a == nil || !refersTo(a.Expr, "local.gateway_advertise_url") {
			t.Errorf("module %s does not get local.gateway_advertise_url", b.Labels[0])
		}
	}
	if len(regions) != 3 {
		t.Fatalf("region module calls %v, want three", regions)
	}
	regs := exampleLocal(t, m, "cluster_registrations")
	for _, r := range regions {
		if !refersTo(regs, "module."+r+".cluster_registration") {
			t.Errorf("local.cluster_registrations leaves out module.%s's cluster", r)
		}
	}
	for _, tc := range []struct {
		name, vars string
		advertise  func(region string) string
		records    bool
	}{
		{"defaults", ``, func(r string) string { return "http://gateway-" + r + ".example.com:8080" }, true},
		{"gateway TLS", `gateway_tls = { secret_name = "gateway-tls", router_secret_name = "router-gateway-tls" }`,
			func(string) string { return "" }, true},
		{"no cluster identity", `cluster_identity = false`, func(string) string { return "" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := evalModule(t, m, tfvars(t, base+tc.vars))
			if err != nil {
				t.Fatal(err)
			}
			locals := e.ctx.Variables["local"]
			for it := locals.GetAttr("gateway_advertise_url").ElementIterator(); it.Next(); {
				k, v := it.Element()
				if want := tc.advertise(k.AsString()); v.AsString() != want {
					t.Errorf("%s advertises %q, want %q", k.AsString(), v.AsString(), want)
				}
			}
			if got := locals.GetAttr("cluster_registrations"); got.IsKnown() && got.LengthInt() == 0 == tc.records {
				t.Errorf("cluster_registrations = %#v with cluster identity %v", got, tc.records)
			}
			for _, b := range m.blocks {
				if b.Type == "module" && b.Labels[0] == "global" {
					v, diags := b.Body.Attributes["gateway_records"].Expr.Value(e.ctx)
					if diags.HasErrors() || v.True() != tc.records {
						t.Errorf("global gateway_records = %#v (%v), want %v", v, diags, tc.records)
					}
				}
			}
		})
	}
}

// callSource returns the source of a module block.
func (m *tfModule) callSource(b *hclsyntax.Block) string {
	for _, c := range m.calls {
		if c.name == b.Labels[0] {
			return c.source
		}
	}
	return ""
}
