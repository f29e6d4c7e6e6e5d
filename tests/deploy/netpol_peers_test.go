package deploy_test

import (
	"net"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// peer is a source a NetworkPolicy rule may admit: a pod (its namespace's and its own labels)
// or an address outside the cluster.
type peer struct {
	ip                  string
	namespace, podLabel map[string]string
}

// admits reports whether the policy lets p reach port (TCP) of the pods it selects.
func admits(np *networkingv1.NetworkPolicy, port int32, p peer) bool {
	for _, rule := range np.Spec.Ingress {
		onPort := len(rule.Ports) == 0
		for _, rp := range rule.Ports {
			onPort = onPort || rp.Port == nil || rp.Port.IntVal == port
		}
		if !onPort {
			continue
		}
		if len(rule.From) == 0 {
			return true
		}
		for _, from := range rule.From {
			if fromAdmits(from, p) {
				return true
			}
		}
	}
	return false
}

func fromAdmits(from networkingv1.NetworkPolicyPeer, p peer) bool {
	if b := from.IPBlock; b != nil {
		_, cidr, err := net.ParseCIDR(b.CIDR)
		if err != nil || p.ip == "" || !cidr.Contains(net.ParseIP(p.ip)) {
			return false
		}
		for _, e := range b.Except {
			if _, ex, err := net.ParseCIDR(e); err == nil && ex.Contains(net.ParseIP(p.ip)) {
				return false
			}
		}
		return true
	}
	if p.podLabel == nil {
		return false // a pod or namespace selector admits pods only
	}
	if from.NamespaceSelector == nil {
		if p.namespace["kubernetes.io/metadata.name"] != testNamespace {
			return false // a bare pod selector admits pods of the policy's namespace
		}
	} else if !selects(from.NamespaceSelector.MatchLabels, p.namespace) {
		return false
	}
	return from.PodSelector == nil || selects(from.PodSelector.MatchLabels, p.podLabel)
}

func selects(match, have map[string]string) bool {
	return labels.SelectorFromSet(match).Matches(labels.Set(have))
}

func networkPolicy(t *testing.T, objs []object) *networkingv1.NetworkPolicy {
	t.Helper()
	nps := find(objs, "NetworkPolicy")
	if len(nps) != 1 {
		t.Fatalf("%d NetworkPolicies, want 1", len(nps))
	}
	return nps[0].typed.(*networkingv1.NetworkPolicy)
}

var releaseNamespace = map[string]string{"kubernetes.io/metadata.name": testNamespace}

// TestRouterChartAdminAdmitsRegistrar checks the registration Job reaches the admin port it
// registers clusters through, whatever networkPolicy.adminFrom narrows it to (an operator's
// CIDR, say), while other pods of the namespace stay out when adminFrom leaves them out; an
// empty adminFrom keeps the port open, and without registrations no registrar peer is added.
func TestRouterChartAdminAdmitsRegistrar(t *testing.T) {
	regs, _ := testRegistrations(t)
	const admin = 9090
	operators := []any{map[string]any{"ipBlock": map[string]any{"cidr": "192.0.2.0/24"}}}
	for _, tc := range []struct {
		name          string
		adminFrom     any // nil: the default
		registrations bool
		otherPod      bool // another pod of the namespace is admitted
	}{
		{"default adminFrom", nil, true, true},
		{"narrowed to operators", operators, true, false},
		{"narrowed, no registrations", operators, false, false},
		{"open", []any{}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := map[string]any{}
			ci := map[string]any{"allowCleartextGateways": true}
			if tc.registrations {
				ci["registrations"] = regs
			}
			vals["clusterIdentity"] = ci
			if tc.adminFrom != nil {
				vals["networkPolicy"] = map[string]any{"adminFrom": tc.adminFrom}
			}
			objs := renderObjects(t, "global-router", vals)
			np := networkPolicy(t, objs)
			job, _ := registrationJob(t, objs)
			if tc.registrations {
				registrar := peer{namespace: releaseNamespace, podLabel: job.Spec.Template.Labels}
				if !admits(np, admin, registrar) {
					t.Errorf(
						"the registration Job's pods (%v) cannot reach the admin port: %v",
						job.Spec.Template.Labels,
						np.Spec.Ingress,
					)
				}
				elsewhere := peer{
					namespace: map[string]string{"kubernetes.io/metadata.name": "other"},
					podLabel:  job.Spec.Template.Labels,
				}
				if tc.adminFrom != nil && len(tc.adminFrom.([]any)) > 0 && admits(np, admin, elsewhere) {
					t.Error("pods labelled as the registrar in another namespace reach the admin port")
				}
			} else if job != nil || strings.Contains(np.String(), "registrar") {
				t.Errorf("without registrations: Job %v, policy %v", job != nil, np.Spec.Ingress)
			}
			other := peer{namespace: releaseNamespace, podLabel: map[string]string{"app": "something-else"}}
			if got := admits(np, admin, other); got != tc.otherPod {
				t.Errorf("another pod of the namespace admitted to the admin port: %v, want %v", got, tc.otherPod)
			}
			if tc.adminFrom != nil && len(tc.adminFrom.([]any)) > 0 && !admits(np, admin, peer{ip: "192.0.2.7"}) {
				t.Error("the operators' CIDR of adminFrom is no longer admitted")
			}
		})
	}
}

// TestChartsLoadBalancerHealthChecks checks the port a load balancer health-checks serves
// /readyz (--listen's or --metrics-listen's) and that the NetworkPolicy admits the load
// balancer's subnets (networkPolicy.healthCheckFrom) to it, while the rest of the VPC stays
// out of a narrowed metrics port; a health check on a narrowed port with no healthCheckFrom
// fails rendering (every target would fail its health check), naming the value to set.
func TestChartsLoadBalancerHealthChecks(t *testing.T) {
	lbSubnets := []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.20.0.0/16"}}}
	np := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	routerTLS := map[string]any{"secretName": "router-tls"}
	gatewayLB := func(port string) map[string]any {
		ann := map[string]any{annHealthProto: "http"}
		if port != "" {
			ann[annHealthPort] = port
		}
		return map[string]any{"enabled": true, "annotations": ann}
	}
	for _, tc := range []struct {
		chart, name string
		vals        map[string]any
		port        int32  // the port health-checked, 0 for none
		listen      string // the flag of the listener serving /readyz there
		err         string // the render error wanted
	}{
		{"global-router", "default: the OpenAI port, open", nil, 8080, "listen", ""},
		{"global-router", "TLS moves the check to the metrics port", np("tls", routerTLS, "networkPolicy", np("healthCheckFrom", lbSubnets)), 9100, "metrics-listen", ""},
		{"global-router", "TLS without healthCheckFrom", np("tls", routerTLS), 0, "", "networkPolicy.healthCheckFrom"},
		{"global-router", "TLS, metrics open to all", np("tls", routerTLS, "networkPolicy", np("metricsFrom", []any{})), 9100, "metrics-listen", ""},
		{"global-router", "narrowed OpenAI port without healthCheckFrom", np("networkPolicy", np("httpFrom",
			[]any{map[string]any{"ipBlock": map[string]any{"cidr": "203.0.113.0/24"}}})), 0, "", "networkPolicy.httpFrom"},
		{"global-router", "narrowed OpenAI port with healthCheckFrom", np("networkPolicy", np("healthCheckFrom", lbSubnets,
			"httpFrom", []any{map[string]any{"ipBlock": map[string]any{"cidr": "203.0.113.0/24"}}})), 8080, "listen", ""},
		{"global-router", "not a load balancer", np("tls", routerTLS, "service", np("type", "ClusterIP")), 0, "", ""},
		{"global-router", "a named health check port", np("service", np("annotations", np(annHealthPort, "metrics"))), 0, "", "want traffic-port or a port number"},
		{"cluster-gateway", "no proxy Service", nil, 0, "", ""},
		{"cluster-gateway", "proxy load balancer, traffic port", np("proxyService", gatewayLB("")), 8080, "listen", ""},
		{"cluster-gateway", "proxy load balancer on the metrics port", np("proxyService", gatewayLB("9090"), "networkPolicy", np("healthCheckFrom", lbSubnets)), 9090, "metrics-listen", ""},
		{"cluster-gateway", "metrics port without healthCheckFrom", np("proxyService", gatewayLB("9090")), 0, "", "networkPolicy.healthCheckFrom"},
	} {
		t.Run(tc.chart+"/"+tc.name, func(t *testing.T) {
			if tc.err != "" {
				_, err := renderChart(t, tc.chart, tc.vals)
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("render error = %v, want one naming %q", err, tc.err)
				}
				return
			}
			objs := renderObjects(t, tc.chart, tc.vals)
			policy := networkPolicy(t, objs)
			if tc.port == 0 {
				return
			}
			dep := find(objs, "Deployment")[0].typed.(*appsv1.Deployment)
			if got := listenPort(t, dep, tc.listen); got != strconv.Itoa(int(tc.port)) {
				t.Fatalf("health-checked port %d, but --%s listens on %s", tc.port, tc.listen, got)
			}
			lb := peer{ip: "10.20.3.4"}
			if !admits(policy, tc.port, lb) {
				t.Errorf("the load balancer (%s) cannot reach port %d: %v", lb.ip, tc.port, policy.Spec.Ingress)
			}
			if tc.listen == "metrics-listen" && policy.Spec.Ingress != nil && admits(policy, tc.port, peer{ip: "10.99.0.1"}) &&
				!strings.Contains(tc.name, "open to all") {
				t.Errorf("port %d admits addresses beyond the load balancer's subnets", tc.port)
			}
		})
	}
}

// checkHealthCheckAdmitted checks the NetworkPolicy of a release rendered with vals admits the
// load balancer of svc, health-checking from ip, to the port it probes: --listen's for
// traffic-port, else the port the annotation names, which must serve /readyz.
func checkHealthCheckAdmitted(t *testing.T, chart string, vals map[string]any, svc *corev1.Service, ip string) {
	t.Helper()
	if svc == nil {
		return
	}
	objs := renderObjects(t, chart, vals)
	dep := find(objs, "Deployment")[0].typed.(*appsv1.Deployment)
	port := svc.Annotations[annHealthPort]
	if port == "" || port == "traffic-port" {
		port = listenPort(t, dep, "listen")
	} else if port != listenPort(t, dep, "metrics-listen") && port != listenPort(t, dep, "listen") {
		t.Fatalf("%s: the load balancer health-checks port %s, where nothing serves /readyz", chart, port)
	}
	n, _ := strconv.Atoi(port)
	if !admits(networkPolicy(t, objs), int32(n), peer{ip: ip}) {
		t.Errorf("%s: the NetworkPolicy keeps the load balancer's health checks (from %s) off port %s", chart, ip, port)
	}
}
