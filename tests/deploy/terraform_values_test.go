package deploy_test

import (
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// tfvars parses Terraform variable assignments, as written in a .tfvars file.
func tfvars(t *testing.T, src string) map[string]cty.Value {
	t.Helper()
	file, diags := hclsyntax.ParseConfig([]byte(src), "test.tfvars", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parse tfvars: %v", diags)
	}
	vals := map[string]cty.Value{}
	for name, a := range file.Body.(*hclsyntax.Body).Attributes {
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			t.Fatalf("tfvars %s: %v", name, diags)
		}
		vals[name] = v
	}
	return vals
}

const (
	regionBaseVars = `
name       = "sy-use1"
region     = "us-east-1"
gossip_key = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
vpc_cidr   = "10.10.0.0/16"
peer_cidrs = ["10.20.0.0/16", "10.30.0.0/16"]
`
	globalBaseVars = `
name        = "sy"
zone_id     = "Z0123456789ABCDEFGHIJ"
record_name = "api.example.com"
regions = {
  "us-east-1" = { lb_dns_name = "r.elb.amazonaws.com", lb_zone_id = "Z26RNL4JYFTOTI", gossip_lb_dns_name = ` +
		`"g.elb.amazonaws.com", gateway_lb_dns_name = "gw.elb.amazonaws.com" }
}
`
	// tlsEverywhere turns on every TLS option of the region module, with client certificates.
	tlsEverywhere = `
router_tls         = { secret_name = "router-tls", require_client_certificates = true }
router_admin_tls   = { secret_name = "router-admin-tls", require_client_certificates = true }
router_gateway_tls = { secret_name = "router-gateway-tls" }
gateway_tls        = { secret_name = "gateway-tls", require_client_certificates = true, advertise_url = ` +
		`"https://gateway-us-east-1.example.com:8080" }
`
)

func loadTFModule(t *testing.T, parts ...string) *tfModule {
	t.Helper()
	return loadModule(t, repoPath(t, append([]string{"terraform"}, parts...)...))
}

// regionValidations are TLS settings of the region module with the error each must get (none:
// accepted). Precondition errors come from helm_release.router, the rest from the variables.
var regionValidations = []struct {
	name, vars, want string
	precondition     bool
}{
	{"defaults", ``, "", false},
	{"TLS everywhere", tlsEverywhere, "", false},
	{
		"router TLS secret name",
		`router_tls = { secret_name = "Router_TLS" }`,
		"router_tls.secret_name must be a Kubernetes object name",
		false,
	},
	{"admin TLS secret name", `router_admin_tls = { secret_name = "" }`, "router_admin_tls.secret_name must be", false},
	{
		"router's gateway TLS secret name",
		`router_gateway_tls = { secret_name = "-tls" }`,
		"router_gateway_tls.secret_name must be",
		false,
	},
	{
		"gateway TLS secret name",
		`gateway_tls = { secret_name = "gw/tls", advertise_url = "https://gw.example.com:8080" }`,
		"gateway_tls.secret_name must be",
		false,
	},
	{
		"gateway advertises http",
		`gateway_tls = { secret_name = "gw-tls", advertise_url = "http://gw.example.com:8080" }`,
		"gateway_tls.advertise_url must be https://",
		false,
	},
	{
		"gateway advertises no host",
		`gateway_tls = { secret_name = "gw-tls", advertise_url = "https://:8080" }`,
		"gateway_tls.advertise_url must be https://",
		false,
	},
	{
		"gateway without advertise_url",
		`gateway_tls = { secret_name = "gw-tls" }`,
		"attribute \"advertise_url\" is required",
		false,
	},
	{"gateways require client certificates the routers lack", `
gateway_tls = { secret_name = "gw-tls", require_client_certificates = true, advertise_url = ` +
		`"https://gw.example.com:8080" }`,
		"gateway_tls.require_client_certificates needs router_gateway_tls with client_certificate = true", true},
	{"routers present no client certificate", `
gateway_tls        = { secret_name = "gw-tls", require_client_certificates = true, advertise_url = ` +
		`"https://gw.example.com:8080" }
router_gateway_tls = { secret_name = "router-gw-tls", client_certificate = false }`,
		"gateway_tls.require_client_certificates needs router_gateway_tls", true},
	{
		"TLS gateways verified by system roots",
		`gateway_tls = { secret_name = "gw-tls", advertise_url = "https://gw.example.com:8080" }`,
		"",
		false,
	},
	// Cluster identity.
	{"cleartext gateway name", `gateway_advertise_url = "http://gateway-us-east-1.example.com:8080"`, "", false},
	{
		"cleartext gateway name with https",
		`gateway_advertise_url = "https://gw.example.com:8080"`,
		"gateway_advertise_url must be http://",
		false,
	},
	{"two advertised URLs", `
gateway_tls           = { secret_name = "gw-tls", advertise_url = "https://gw.example.com:8080" }
gateway_advertise_url = "http://gw.example.com:8080"`, "Give gateway_advertise_url only without gateway_tls", true},
	{"registrations", testRegistrationVars, "", false},
	{"a cluster registered twice", `
cluster_registrations = [
  { cluster = "sy-use1", region = "us-east-1", gateway_urls = ["https://gw.example.com:8080"], public_keys = ["k"] },
  { cluster = "sy-use1", region = "us-west-2", gateway_urls = ["https://gw2.example.com:8080"], public_keys = ["k"] },
]`, "cluster_registrations lists a cluster twice", false},
	{"a registered URL with a path", `
cluster_registrations = [{ cluster = "sy-use1", region = "us-east-1", gateway_urls = ` +
		`["https://gw.example.com:8080/v1"], public_keys = ["k"] }]`,
		"Each of cluster_registrations needs", false},
	{"a registration without keys", `
cluster_registrations = [{ cluster = "sy-use1", region = "us-east-1", gateway_urls = ` +
		`["https://gw.example.com:8080"], public_keys = [] }]`,
		"Each of cluster_registrations needs", false},
	{"registrations behind admin mutual TLS without a client certificate", testRegistrationVars + `
router_admin_tls = { secret_name = "admin-tls", require_client_certificates = true }`,
		"need router_admin_tls.client_secret_name", true},
	{"registrations behind admin mutual TLS", testRegistrationVars + `
router_admin_tls = { secret_name = "admin-tls", require_client_certificates = true, client_secret_name = ` +
		`"registrar-tls" }`, "", false},
	// Regional gossip pools.
	{"aggregator", `aggregator = { wan_join = ["gossip-wan-us-west-2.example.com:7947"] }`, "", false},
	{"aggregator, first region", `aggregator = {}`, "", false},
	{
		"aggregator seed without a port",
		`aggregator = { wan_join = ["gossip-wan-us-west-2.example.com"] }`,
		"Each of aggregator.wan_join must be host:port",
		false,
	},
	{
		"aggregator beside a fleet-wide pool",
		"aggregator = {}\ngossip_join = [\"gossip-us-west-2.example.com:7946\"]",
		"leave gossip_join empty",
		true,
	},
	{"previous key not PEM", `previous_signing_public_keys = ["AAAA"]`, "must be a PEM PUBLIC KEY block", false},
	{"model with a comma", `cluster_models = ["a,b"]`, "without commas or spaces", false},
}

// testRegistrationVars registers two clusters: this one over cleartext, another over TLS.
const testRegistrationVars = `
cluster_registrations = [
  { cluster = "sy-use1", region = "us-east-1", gateway_urls = ["http://gateway-us-east-1.example.com:8080"], ` +
	`public_keys = ["-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAEP09ObEdzYU4LPkc/7n0FfRWnQjGrsYZmLPgFhiRFgA=\n-----END ` +
	`PUBLIC KEY-----\n"] },
  { cluster = "sy-usw2", region = "us-west-2", gateway_urls = ["https://gateway-us-west-2.example.com:8080"], models ` +
	`= ["llama"], public_keys = ["-----BEGIN PUBLIC ` +
	`KEY-----\nMCowBQYDK2VwAyEAF6Gz3nJrIVQx4ujwSrOWRflUL0xgqLcibpTeL3eq9+4=\n-----END PUBLIC KEY-----\n"] },
]
`

// TestTerraformRegionValidations checks the region module refuses TLS settings that cannot work,
// with a message naming the variable, and accepts the ones that can.
func TestTerraformRegionValidations(t *testing.T) {
	m := loadTFModule(t, "modules", "region")
	for _, tt := range regionValidations {
		t.Run(tt.name, func(t *testing.T) {
			e, err := evalModule(t, m, tfvars(t, regionBaseVars+tt.vars))
			if err == nil {
				err = e.preconditions(t, "helm_release", "router", nil)
			}
			if tt.want == "" && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// helmValues evaluates the values of the region module's helm_release name.
func helmValues(t *testing.T, e *tfEval, name string) map[string]any {
	t.Helper()
	v := e.attr(t, "helm_release", name, "values", nil)
	if !v.IsWhollyKnown() || v.LengthInt() != 1 {
		t.Fatalf("helm_release.%s values = %#v, want one known document", name, v)
	}
	var vals map[string]any
	if err := yaml.Unmarshal([]byte(v.Index(cty.NumberIntVal(0)).AsString()), &vals); err != nil {
		t.Fatal(err)
	}
	return vals
}

// valueAt returns the value at a path of map keys (keys may hold dots, as annotations do).
func valueAt(vals map[string]any, path ...string) any {
	var cur any = vals
	for _, k := range path {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	return cur
}

const (
	annHealthPort  = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-port"
	annHealthProto = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-protocol"
	annScheme      = "service.beta.kubernetes.io/aws-load-balancer-scheme"
)

// TestTerraformRegionTLSValues checks the region module's TLS variables reach the Helm releases'
// values, and that the charts rendered with those values run the binaries with the matching
// flags, behind load balancers whose ports and health checks fit them.
func TestTerraformRegionTLSValues(t *testing.T) {
	m := loadTFModule(t, "modules", "region")
	tests := []struct {
		name, vars  string
		routerFlags []string // --flags the router must get (the others of tlsFlags must be absent)
		gwFlags     []string
		port        float64 // the router load balancer's port
		healthPort  string  // its health check port
	}{
		{"no TLS", ``, nil, nil, 80, "traffic-port"},
		{"router TLS", `router_tls = { secret_name = "router-tls" }`, []string{"tls-cert-file"}, nil, 443, "9100"},
		{
			"TLS everywhere",
			tlsEverywhere,
			[]string{
				"tls-cert-file",
				"tls-client-ca-file",
				"admin-tls-cert-file",
				"admin-tls-client-ca-file",
				"gateway-ca-file",
				"gateway-cert-file",
			},
			[]string{"tls-cert-file", "tls-client-ca-file"},
			443,
			"9100",
		},
		{
			"gateway TLS, system roots",
			`gateway_tls = { secret_name = "gw-tls", advertise_url = "https://gw.example.com:8080" }`,
			nil,
			[]string{"tls-cert-file"},
			80,
			"traffic-port",
		},
	}
	tlsFlags := []string{"tls-cert-file", "tls-client-ca-file", "admin-tls-cert-file", "admin-tls-client-ca-file",
		"gateway-ca-file", "gateway-cert-file"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := evalModule(t, m, tfvars(t, regionBaseVars+tt.vars))
			if err != nil {
				t.Fatal(err)
			}
			router, gateway := helmValues(t, e, "router"), helmValues(t, e, "gateway")
			if got := valueAt(router, "service", "port"); got != tt.port {
				t.Errorf("router service.port = %v, want %v", got, tt.port)
			}
			if got := valueAt(router, "service", "annotations", annHealthPort); got != tt.healthPort {
				t.Errorf("router load balancer health check port = %v, want %v", got, tt.healthPort)
			}
			vars := tfvars(t, tt.vars)
			checkSecretValue(t, router, vars, "router_tls", "tls")
			checkSecretValue(t, router, vars, "router_admin_tls", "admin", "tls")
			checkSecretValue(t, router, vars, "router_gateway_tls", "gatewayTLS")
			checkSecretValue(t, gateway, vars, "gateway_tls", "tls")

			dep, svcs := renderRelease(t, "global-router", router)
			checkFlags(t, "router", dep, tlsFlags, tt.routerFlags)
			checkRouterLoadBalancer(t, dep, svcs["sy-global-router"], router)
			checkHealthCheckAdmitted(t, "global-router", router, svcs["sy-global-router"], "10.10.1.2")
			dep, svcs = renderRelease(t, "cluster-gateway", gateway)
			checkFlags(t, "gateway", dep, tlsFlags[:2], tt.gwFlags)
			checkGatewayLoadBalancer(t, dep, svcs["sy-cluster-gateway-proxy"], vars["gateway_tls"])
			checkHealthCheckAdmitted(t, "cluster-gateway", gateway, svcs["sy-cluster-gateway-proxy"], "10.10.1.2")
		})
	}
}

// checkSecretValue checks the chart value path.secretName is the variable's secret_name, or
// empty without the variable.
func checkSecretValue(t *testing.T, vals map[string]any, vars map[string]cty.Value, variable string, path ...string) {
	t.Helper()
	want := ""
	if v, ok := vars[variable]; ok {
		want = v.GetAttr("secret_name").AsString()
	}
	if got := valueAt(vals, append(path, "secretName")...); got != want {
		t.Errorf("%s: %s.secretName = %v, want %q", variable, strings.Join(path, "."), got, want)
	}
}

// renderRelease lints and renders a chart with a release's values and returns its Deployment and
// Services.
func renderRelease(t *testing.T, chart string, vals map[string]any) (*appsv1.Deployment, map[string]*corev1.Service) {
	t.Helper()
	for _, m := range lint.RunAll(repoPath(t, "deploy", "charts", chart), vals, testNamespace).Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint %s: %v", chart, m)
		}
	}
	objs := renderObjects(t, chart, vals)
	svcs := map[string]*corev1.Service{}
	for _, o := range find(objs, "Service") {
		svcs[o.name()] = o.typed.(*corev1.Service)
	}
	return find(objs, "Deployment")[0].typed.(*appsv1.Deployment), svcs
}

// checkFlags wants exactly the flags of want among those of all, and every file flag in a
// read-only secret mount.
func checkFlags(t *testing.T, what string, dep *appsv1.Deployment, all, want []string) {
	t.Helper()
	c := dep.Spec.Template.Spec.Containers[0]
	for _, f := range all {
		if got := argValue(c.Args, f) != ""; got != slices.Contains(want, f) {
			t.Errorf("%s: --%s given = %v, want %v: %v", what, f, got, !got, c.Args)
		}
	}
	var files []string
	for _, a := range c.Args {
		if name, _, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok && strings.HasSuffix(name, "-file") {
			files = append(files, name)
		}
	}
	checkSecretFiles(t, dep.Spec.Template.Spec, c, files...)
}

// listenPort returns the port of a --name=:PORT flag.
func listenPort(t *testing.T, dep *appsv1.Deployment, name string) string {
	t.Helper()
	v := argValue(dep.Spec.Template.Spec.Containers[0].Args, name)
	_, port, ok := strings.Cut(v, ":")
	if !ok {
		t.Fatalf("--%s=%q has no port", name, v)
	}
	return port
}

// checkRouterLoadBalancer checks the router's load balancer listens on the values' port and
// health-checks a port that answers plain HTTP: the OpenAI port without TLS, else the metrics port.
func checkRouterLoadBalancer(t *testing.T, dep *appsv1.Deployment, svc *corev1.Service, vals map[string]any) {
	t.Helper()
	if svc == nil || len(svc.Spec.Ports) != 1 {
		t.Fatal("want a router Service with one port")
	}
	if got, want := float64(svc.Spec.Ports[0].Port), valueAt(vals, "service", "port"); got != want {
		t.Errorf("router load balancer port %v, want %v", got, want)
	}
	tls := argValue(dep.Spec.Template.Spec.Containers[0].Args, "tls-cert-file") != ""
	want := "traffic-port"
	if tls {
		want = listenPort(t, dep, "metrics-listen")
	}
	if got := svc.Annotations[annHealthPort]; got != want || svc.Annotations[annHealthProto] != "http" {
		t.Errorf(
			"router load balancer health check %s on %s, want http on %s (TLS %v)",
			svc.Annotations[annHealthProto],
			got,
			want,
			tls,
		)
	}
}

// checkGatewayLoadBalancer checks a TLS gateway advertises the URL it was given, reachable through
// an internal load balancer with the HTTP port alone, health-checked on the metrics port, and that
// without TLS there is no such load balancer.
func checkGatewayLoadBalancer(t *testing.T, dep *appsv1.Deployment, svc *corev1.Service, tls cty.Value) {
	t.Helper()
	advertised := argValue(dep.Spec.Template.Spec.Containers[0].Args, "advertise-url")
	if tls == cty.NilVal {
		if svc != nil || !strings.HasPrefix(advertised, "http://$(POD_IP):") {
			t.Errorf("gateway without TLS: proxy Service %v, --advertise-url=%s", svc != nil, advertised)
		}
		return
	}
	want := tls.GetAttr("advertise_url").AsString()
	u, err := url.Parse(want)
	if err != nil || advertised != want {
		t.Fatalf("--advertise-url=%s, want %s (%v)", advertised, want, err)
	}
	if svc == nil {
		t.Fatal("gateway with TLS but no proxy Service")
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Spec.Ports) != 1 {
		t.Fatalf(
			"gateway proxy Service %s with ports %v, want a LoadBalancer with the HTTP port alone",
			svc.Spec.Type,
			svc.Spec.Ports,
		)
	}
	if got := fmt.Sprint(svc.Spec.Ports[0].Port); got != u.Port() || got != listenPort(t, dep, "listen") {
		t.Errorf("gateway load balancer port %s, want the advertised %s and --listen's", got, u.Port())
	}
	if svc.Annotations[annScheme] != "internal" || svc.Annotations[annHealthPort] != listenPort(t, dep, "metrics-listen") {
		t.Errorf("gateway load balancer annotations %v, want internal, health-checked on the metrics port", svc.Annotations)
	}
	if want := []string{
		"10.10.0.0/16",
		"10.20.0.0/16",
		"10.30.0.0/16",
	}; !reflect.DeepEqual(
		svc.Spec.LoadBalancerSourceRanges,
		want,
	) {
		t.Errorf(
			"gateway load balancer source ranges %v, want this VPC and its peers %v",
			svc.Spec.LoadBalancerSourceRanges,
			want,
		)
	}
}

// TestTerraformGlobalRouterTLS checks Route 53 health-checks the routers the way their load
// balancers serve: HTTP, HTTPS, or TCP when a client certificate is required.
func TestTerraformGlobalRouterTLS(t *testing.T) {
	m := loadTFModule(t, "modules", "global")
	each := map[string]cty.Value{"key": cty.StringVal("us-east-1"), "value": cty.DynamicVal}
	tests := []struct {
		vars, typ, endpoint string
		port                int64
		path                bool
	}{
		{``, "HTTP", "http://api.example.com", 80, true},
		{`router_tls = "on"`, "HTTPS", "https://api.example.com", 443, true},
		{`router_tls = "mutual"`, "TCP", "https://api.example.com", 443, false},
		{"router_tls = \"on\"\nhealth_check_port = 8443", "HTTPS", "https://api.example.com", 8443, true},
	}
	for _, tt := range tests {
		t.Run(tt.vars, func(t *testing.T) {
			e, err := evalModule(t, m, tfvars(t, globalBaseVars+tt.vars))
			if err != nil {
				t.Fatal(err)
			}
			typ := e.attr(t, "aws_route53_health_check", "router", "type", each)
			port := e.attr(t, "aws_route53_health_check", "router", "port", each)
			path := e.attr(t, "aws_route53_health_check", "router", "resource_path", each)
			if typ.AsString() != tt.typ || !port.Equals(cty.NumberIntVal(tt.port)).True() || path.IsNull() == tt.path {
				t.Errorf(
					"health check %s on %s path %#v, want %s on %d (path %v)",
					typ.AsString(),
					port.AsBigFloat(),
					path,
					tt.typ,
					tt.port,
					tt.path,
				)
			}
			if got := e.output(t, "endpoint"); got.AsString() != tt.endpoint {
				t.Errorf("endpoint = %s, want %s", got.AsString(), tt.endpoint)
			}
		})
	}
	if _, err := evalModule(
		t,
		m,
		tfvars(t, globalBaseVars+`router_tls = "yes"`),
	); err == nil ||
		!strings.Contains(err.Error(), "router_tls must be off, on or mutual") {
		t.Errorf("router_tls = \"yes\" accepted or wrong error: %v", err)
	}
}

// TestTerraformGatewayNames checks the example's gateways advertise the names the global module
// keeps records for, on the port the region module's load balancer listens on.
func TestTerraformGatewayNames(t *testing.T) {
	global, err := evalModule(t, loadTFModule(t, "modules", "global"), tfvars(t, globalBaseVars+"gateway_records = true"))
	if err != nil {
		t.Fatal(err)
	}
	region, err := evalModule(t, loadTFModule(t, "modules", "region"), tfvars(t, regionBaseVars))
	if err != nil {
		t.Fatal(err)
	}
	example, err := evalModule(t, loadTFModule(t, "examples", "multi-region"), tfvars(t, `
zone_id     = "Z0123456789ABCDEFGHIJ"
record_name = "api.example.com"
gateway_tls = { secret_name = "gateway-tls", require_client_certificates = true, router_secret_name = `+
		`"router-gateway-tls" }
`))
	if err != nil {
		t.Fatal(err)
	}
	regions := global.vars["regions"]
	for it := regions.ElementIterator(); it.Next(); {
		key, val := it.Element()
		each := map[string]cty.Value{"key": key, "value": val}
		name := global.attr(t, "aws_route53_record", "gateway", "name", each).AsString()
		if got := global.attr(
			t,
			"aws_route53_record",
			"gateway",
			"records",
			each,
		); !got.Equals(cty.TupleVal([]cty.Value{val.GetAttr("gateway_lb_dns_name")})).
			True() {
			t.Errorf("gateway record %s → %#v, want the region's gateway_lb_dns_name", name, got)
		}
		port := region.ctx.Variables["local"].GetAttr("gateway_http_port").AsBigFloat().String()
		advertised := example.ctx.Variables["local"].GetAttr("gateway_tls").
			GetAttr(key.AsString()).
			GetAttr("advertise_url").
			AsString()
		if want := "https://" + name + ":" + port; advertised != want {
			t.Errorf("%s: the example advertises %s, want %s", key.AsString(), advertised, want)
		}
		each["value"] = cty.ObjectVal(map[string]cty.Value{"gateway_lb_dns_name": cty.NullVal(cty.String)})
		if err := global.preconditions(t, "aws_route53_record", "gateway", each); err == nil {
			t.Error("a gateway record without the region's gateway_lb_dns_name passes its precondition")
		}
	}
	rgt := example.ctx.Variables["local"].GetAttr("router_gateway_tls")
	if rgt.GetAttr("secret_name").AsString() != "router-gateway-tls" || !rgt.GetAttr("client_certificate").True() {
		t.Errorf("the example's routers get %#v, want router-gateway-tls with a client certificate", rgt)
	}
}
