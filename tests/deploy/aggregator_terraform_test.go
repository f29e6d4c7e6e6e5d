package deploy_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"

	"github.com/switchyard-dev/switchyard/gossip"
)

// aggregatorVars turns on the region module's regional gossip pool, with the other two regions'
// aggregators as seeds and every cluster registered (so the routers require cluster identity).
const aggregatorVars = `
aggregator = { wan_join = ["gossip-wan-us-west-2.example.com:7947", "gossip-wan-eu-west-1.example.com:7947"] }
` + testRegistrationVars

// TestTerraformRegionAggregator checks the region module's aggregator variable: the routers become
// aggregators of a regional pool (LAN timings, WAN seeds, the WAN port admitted from this VPC and
// the peers, an internal load balancer in front of it), the gossip port closes to the other regions
// in the NetworkPolicies and security groups while the WAN port opens, and the region key is
// generated as an Ed25519 key whose private half reaches the router chart as a sensitive value the
// chart turns into the Secret behind --region-signing-key-file, and whose public half is output
// region_registration. Without the variable nothing of it is rendered.
func TestTerraformRegionAggregator(t *testing.T) {
	m := loadTFModule(t, "modules", "region")
	e, err := evalModule(t, m, tfvars(t, regionBaseVars+aggregatorVars))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.preconditions(t, "helm_release", "router", nil); err != nil {
		t.Fatal(err)
	}
	key := e.block(t, "resource", "tls_private_key", "region_signing")
	if alg := e.attr(t, "tls_private_key", "region_signing", "algorithm", nil); alg.AsString() != "ED25519" {
		t.Errorf("region key algorithm = %s, want ED25519", alg.AsString())
	}
	if c := key.Body.Attributes["count"]; c == nil || !refersTo(c.Expr, "var.aggregator") {
		t.Error("tls_private_key.region_signing is not counted on var.aggregator: a region without aggregators needs no key")
	}

	// The private key reaches the router chart as aggregator.regionSigningKey.key, a string.
	_, privPEM, pubPEM := testKeyPair(t)
	set := regionKeySetSensitive(t, e, privPEM, pubPEM)
	if len(set) != 1 || set[0]["name"] != "aggregator.regionSigningKey.key" || set[0]["type"] != "string" ||
		set[0]["value"] != privPEM {
		t.Fatalf("helm_release.router set_sensitive = %v, want aggregator.regionSigningKey.key (string) from "+
			"tls_private_key.region_signing.private_key_pem_pkcs8", set)
	}
	router := helmValues(t, e, "router")
	if got := valueAt(router, "gossip", "profile"); got != "lan" {
		t.Errorf("router gossip.profile = %v, want lan in a regional pool", got)
	}
	if got := valueAt(router, "aggregator", "wanFrom"); !slices.Equal(toStrings(got),
		[]string{"10.10.0.0/16", "10.20.0.0/16", "10.30.0.0/16"}) {
		t.Errorf("aggregator.wanFrom = %v, want this VPC (the load balancer) and the peers", got)
	}
	router["aggregator"].(map[string]any)["regionSigningKey"] = map[string]any{"key": set[0]["value"]} // as Helm sets it
	dep, svcs := renderRelease(t, "global-router", router)
	c := dep.Spec.Template.Spec.Containers[0]
	for flag, want := range map[string]string{
		"gossip-aggregator": "true",
		"gossip-wan-bind":   "0.0.0.0:7947",
		"gossip-wan-join":   "gossip-wan-us-west-2.example.com:7947,gossip-wan-eu-west-1.example.com:7947",
		"gossip-profile":    "lan",
		"gossip-join":       "",
	} {
		if got := argValue(c.Args, flag); got != want {
			t.Errorf("router --%s=%q, want %q", flag, got, want)
		}
	}
	objs := renderObjects(t, "global-router", router)
	checkKeyFile(t, objs, dep.Spec.Template.Spec, c, "region-signing-key-file", "sy-global-router-region-signing",
		func(path string) error {
			_, err := gossip.LoadSigningKeyFile(path)
			return err
		})
	wan := svcs["sy-global-router-aggregator"]
	if wan == nil || wan.Spec.Type != corev1.ServiceTypeLoadBalancer || wan.Annotations[annScheme] != "internal" ||
		wan.Annotations["service.beta.kubernetes.io/aws-load-balancer-name"] != "sy-use1-wan" {
		t.Fatalf("aggregator Service %+v, want an internal load balancer named sy-use1-wan", wan)
	}
	np := networkPolicy(t, objs)
	checkWANPolicy(t, np, 7947, []string{"10.10.7.8", "10.20.7.8", "10.30.7.8"})
	if admits(np, 7946, peer{ip: "10.20.7.8"}) {
		t.Error("the routers' gossip port still admits another region's VPC in a regional pool")
	}
	gw := renderObjects(t, "cluster-gateway", helmValues(t, e, "gateway"))
	if admits(networkPolicy(t, gw), 7946, peer{ip: "10.20.7.8"}) {
		t.Error("the gateways' gossip port still admits another region's VPC in a regional pool")
	}

	// Security groups: the WAN port opens to the peers, the gossip port stays inside the region.
	if got, want := peerRules(t, e), []string{
		"10.20.0.0/16 tcp/7947", "10.20.0.0/16 tcp/8080", "10.20.0.0/16 udp/7947",
		"10.30.0.0/16 tcp/7947", "10.30.0.0/16 tcp/8080", "10.30.0.0/16 udp/7947",
	}; !slices.Equal(got, want) {
		t.Errorf("peer security group rules %v, want %v", got, want)
	}
	reg := e.output(t, "region_registration")
	if reg.IsNull() || reg.GetAttr("region").AsString() != "us-east-1" {
		t.Errorf("region_registration = %#v", reg)
	}
	for _, b := range m.blocks {
		if b.Type == "output" && b.Labels[0] == "region_registration" &&
			!refersTo(b.Body.Attributes["value"].Expr, "tls_private_key.region_signing") {
			t.Error("region_registration does not carry tls_private_key.region_signing's public key")
		}
	}

	// Without the variable: one fleet-wide pool, as before.
	e, err = evalModule(t, m, tfvars(t, regionBaseVars))
	if err != nil {
		t.Fatal(err)
	}
	if set := regionKeySetSensitive(t, e, privPEM, pubPEM); len(set) != 0 {
		t.Errorf("router set_sensitive = %v without aggregator", set)
	}
	router = helmValues(t, e, "router")
	dep, svcs = renderRelease(t, "global-router", router)
	if argValue(dep.Spec.Template.Spec.Containers[0].Args, "gossip-aggregator") != "" ||
		svcs["sy-global-router-aggregator"] != nil || valueAt(router, "gossip", "profile") != "wan" {
		t.Error("aggregator flags or Service, or LAN timings, without aggregator")
	}
	if got := peerRules(
		t,
		e,
	); !slices.Contains(got, "10.20.0.0/16 udp/7946") ||
		slices.Contains(got, "10.20.0.0/16 tcp/7947") {
		t.Errorf("peer security group rules %v without aggregator, want gossip and no WAN port", got)
	}
	if reg := e.output(t, "region_registration"); !reg.IsNull() {
		t.Errorf("region_registration = %#v without aggregator, want null", reg)
	}
}

// regionKeySetSensitive evaluates helm_release.router's set_sensitive with the region key (when
// the module creates it, var.aggregator) known as the PEM blocks given.
func regionKeySetSensitive(t *testing.T, e *tfEval, privPEM, pubPEM string) []map[string]string {
	t.Helper()
	a := e.block(t, "resource", "helm_release", "router").Body.Attributes["set_sensitive"]
	if a == nil {
		t.Fatal("helm_release.router has no set_sensitive")
	}
	var keys []cty.Value
	if !e.ctx.Variables["local"].GetAttr("aggregator").False() {
		keys = append(keys, cty.ObjectVal(map[string]cty.Value{
			"private_key_pem_pkcs8": cty.StringVal(privPEM), "public_key_pem": cty.StringVal(pubPEM)}))
	}
	ctx := e.ctx.NewChild()
	ctx.Variables = map[string]cty.Value{"tls_private_key": cty.ObjectVal(map[string]cty.Value{
		"region_signing": cty.TupleVal(keys), "signing": cty.DynamicVal})}
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		t.Fatalf("helm_release.router set_sensitive: %v (%#v)", diags, v)
	}
	var out []map[string]string
	for it := v.ElementIterator(); it.Next(); {
		_, el := it.Element()
		m := map[string]string{}
		for k, av := range el.AsValueMap() {
			m[k] = av.AsString()
		}
		out = append(out, m)
	}
	return out
}

// peerRules returns the region module's security group rules for the other regions, as
// "CIDR protocol/port", sorted.
func peerRules(t *testing.T, e *tfEval) []string {
	t.Helper()
	var out []string
	for it := e.ctx.Variables["local"].GetAttr("peer_rules").ElementIterator(); it.Next(); {
		_, r := it.Element()
		port, _ := r.GetAttr("port").AsBigFloat().Int64()
		out = append(out, fmt.Sprintf("%s %s/%d", r.GetAttr("cidr").AsString(), r.GetAttr("protocol").AsString(), port))
	}
	sort.Strings(out)
	return out
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, s := range l {
		out = append(out, s.(string))
	}
	return out
}

// TestTerraformRegionalPools checks the example and the global module wire the regional pools
// together: with regional_pools every region module gets aggregator with the other regions'
// gossip-wan-<region>.<zone> seeds on the region module's WAN port, no fleet-wide gossip seeds,
// and the global module keeps exactly those records pointing at each region's wan_lb_dns_name;
// without it nothing changes.
func TestTerraformRegionalPools(t *testing.T) {
	m := loadTFModule(t, "examples", "multi-region")
	const base = "zone_id = \"Z0123456789ABCDEFGHIJ\"\nrecord_name = \"api.example.com\"\n"
	for _, b := range m.blocks {
		switch {
		case b.Type == "module" && strings.HasSuffix(m.callSource(b), "modules/region"):
			if a := b.Body.Attributes["aggregator"]; a == nil || !refersTo(a.Expr, "local.aggregator") {
				t.Errorf("module %s does not get local.aggregator", b.Labels[0])
			}
		case b.Type == "module" && b.Labels[0] == "global":
			regions := b.Body.Attributes["regions"]
			for _, r := range []string{"us_east_1", "us_west_2", "eu_west_1"} {
				if !refersTo(regions.Expr, "module."+r+".wan_lb_dns_name") {
					t.Errorf("the global module's regions leave out module.%s.wan_lb_dns_name", r)
				}
			}
		}
	}
	region, err := evalModule(t, loadTFModule(t, "modules", "region"), tfvars(t, regionBaseVars))
	if err != nil {
		t.Fatal(err)
	}
	wanPort := region.ctx.Variables["local"].GetAttr("wan_port").AsBigFloat().String()
	global, err := evalModule(t, loadTFModule(t, "modules", "global"), tfvars(t, `
name             = "sy"
zone_id          = "Z0123456789ABCDEFGHIJ"
record_name      = "api.example.com"
wan_seed_records = true
regions = {
  "us-east-1" = { lb_dns_name = "r1", lb_zone_id = "Z1", gossip_lb_dns_name = "g1", wan_lb_dns_name = "w1" }
  "us-west-2" = { lb_dns_name = "r2", lb_zone_id = "Z2", gossip_lb_dns_name = "g2", wan_lb_dns_name = "w2" }
  "eu-west-1" = { lb_dns_name = "r3", lb_zone_id = "Z3", gossip_lb_dns_name = "g3", wan_lb_dns_name = "w3" }
}`))
	if err != nil {
		t.Fatal(err)
	}
	records := map[string]bool{}
	for it := global.vars["regions"].ElementIterator(); it.Next(); {
		key, val := it.Element()
		each := map[string]cty.Value{"key": key, "value": val}
		name := global.attr(t, "aws_route53_record", "wan_seed", "name", each).AsString()
		records[name+":"+wanPort] = true
		if got := global.attr(t, "aws_route53_record", "wan_seed", "records", each); !got.Equals(
			cty.TupleVal([]cty.Value{val.GetAttr("wan_lb_dns_name")})).True() {
			t.Errorf("WAN seed record %s → %#v, want the region's wan_lb_dns_name", name, got)
		}
		each["value"] = cty.ObjectVal(map[string]cty.Value{"wan_lb_dns_name": cty.NullVal(cty.String)})
		if err := global.preconditions(t, "aws_route53_record", "wan_seed", each); err == nil {
			t.Error("a WAN seed record without the region's wan_lb_dns_name passes its precondition")
		}
	}

	for _, tc := range []struct {
		name, vars string
		regional   bool
	}{
		{"one pool", ``, false},
		{"regional pools", `regional_pools = true`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := evalModule(t, m, tfvars(t, base+tc.vars))
			if err != nil {
				t.Fatal(err)
			}
			locals := e.ctx.Variables["local"]
			for it := locals.GetAttr("aggregator").ElementIterator(); it.Next(); {
				k, v := it.Element()
				join := locals.GetAttr("gossip_join").GetAttr(k.AsString())
				if !tc.regional {
					if !v.IsNull() || join.LengthInt() != 2 {
						t.Errorf("%s: aggregator %#v, gossip_join %#v in one pool", k.AsString(), v, join)
					}
					continue
				}
				if v.IsNull() || join.LengthInt() != 0 {
					t.Fatalf("%s: aggregator %#v, gossip_join %#v with regional pools", k.AsString(), v, join)
				}
				var seeds []string
				for s := v.GetAttr("wan_join").ElementIterator(); s.Next(); {
					_, sv := s.Element()
					seeds = append(seeds, sv.AsString())
					if !records[sv.AsString()] {
						t.Errorf("%s joins %s, which is no WAN seed record of the global module (%v)",
							k.AsString(), sv.AsString(), records)
					}
				}
				if len(seeds) != 2 || slices.Contains(seeds, "gossip-wan-"+k.AsString()+".example.com:"+wanPort) {
					t.Errorf("%s: wan_join %v, want the two other regions' seeds", k.AsString(), seeds)
				}
			}
			for _, b := range m.blocks {
				if b.Type == "module" && b.Labels[0] == "global" {
					v, diags := b.Body.Attributes["wan_seed_records"].Expr.Value(e.ctx)
					if diags.HasErrors() || v.True() != tc.regional {
						t.Errorf("global wan_seed_records = %#v (%v), want %v", v, diags, tc.regional)
					}
				}
			}
		})
	}
}
