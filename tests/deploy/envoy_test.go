package deploy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	infv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
)

// TestEnvoyGatewayManifests decodes deploy/envoy-gateway: InferencePools strictly with GIE's types,
// the Gateway API and Envoy Gateway objects with their required fields, and checks the references
// between them.
func TestEnvoyGatewayManifests(t *testing.T) {
	files, err := filepath.Glob(repoPath(t, "deploy", "envoy-gateway", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var all []object
	for _, f := range files {
		objs, err := decodeStrict(filepath.Base(f), string(readFile(t, f)))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, objs...)
	}
	pools := map[string]*infv1.InferencePool{}
	for _, o := range all {
		switch o.gvk.Kind {
		case "InferencePool":
			p, ok := o.typed.(*infv1.InferencePool)
			if !ok || o.gvk.Version != "v1" {
				t.Fatalf("%s: InferencePool %s is not inference.networking.k8s.io/v1", o.source, o.name())
			}
			checkPool(t, p)
			pools[p.Name] = p
		case "GatewayClass":
			requireFields(t, o, "spec.controllerName")
		case "Gateway":
			requireFields(t, o, "spec.gatewayClassName", "spec.listeners")
		case "HTTPRoute":
			requireFields(t, o, "spec.parentRefs", "spec.rules")
		case "EnvoyExtensionPolicy":
			requireFields(t, o, "spec.targetRefs", "spec.extProc")
		default:
			t.Errorf("%s: unexpected kind %s", o.source, o.gvk)
		}
	}
	for _, o := range find(all, "HTTPRoute") {
		checkRouteBackends(t, o, pools)
	}
}

func checkPool(t *testing.T, p *infv1.InferencePool) {
	t.Helper()
	if len(p.Spec.Selector.MatchLabels) == 0 || len(p.Spec.TargetPorts) == 0 {
		t.Errorf("InferencePool %s: needs spec.selector.matchLabels and spec.targetPorts", p.Name)
	}
	ref := p.Spec.EndpointPickerRef
	if !strings.HasSuffix(string(ref.Name), "-cluster-gateway") || ref.Port == nil || ref.Port.Number != 9002 {
		t.Errorf("InferencePool %s: endpointPickerRef %+v must name a cluster-gateway Service on port 9002", p.Name, ref)
	}
}

func checkRouteBackends(t *testing.T, o object, pools map[string]*infv1.InferencePool) {
	t.Helper()
	rules, _, _ := unstructuredSlice(o.raw.Object, "spec", "rules")
	for _, r := range rules {
		refs, _, _ := unstructuredSlice(r.(map[string]any), "backendRefs")
		for _, ref := range refs {
			m := ref.(map[string]any)
			if m["kind"] == "InferencePool" {
				if m["group"] != infv1.GroupName || pools[m["name"].(string)] == nil {
					t.Errorf("%s: HTTPRoute %s references unknown InferencePool %v", o.source, o.name(), m)
				}
			}
		}
	}
}

func unstructuredSlice(obj map[string]any, path ...string) ([]any, bool, error) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		cur = m[p]
	}
	s, ok := cur.([]any)
	return s, ok, nil
}

func TestEnvoyGatewayReadme(t *testing.T) {
	if _, err := os.Stat(repoPath(t, "deploy", "envoy-gateway", "README.md")); err != nil {
		t.Fatal(err)
	}
}
