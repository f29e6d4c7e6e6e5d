package deploy_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
	infv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	"sigs.k8s.io/yaml"
)

// object is one decoded manifest: typed when its kind is known to the scheme, unstructured
// otherwise (custom resources without Go types here, such as ServiceMonitor or HTTPRoute).
type object struct {
	source string
	gvk    schema.GroupVersionKind
	typed  runtime.Object
	raw    *unstructured.Unstructured
}

func (o object) name() string { return o.raw.GetName() }

var (
	kubeScheme = newScheme()
	strict     = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, kubeScheme, kubeScheme,
		kjson.SerializerOptions{Yaml: true, Strict: true})
)

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := infv1.Install(s); err != nil {
		panic(err)
	}
	return s
}

// splitDocs splits a multi-document YAML stream; empty and comment-only documents are dropped.
func splitDocs(src string) []string {
	var docs []string
	var cur []string
	flush := func() {
		doc := strings.Join(cur, "\n")
		cur = cur[:0]
		for _, l := range strings.Split(doc, "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				docs = append(docs, doc)
				return
			}
		}
	}
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(line, "---") {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return docs
}

// decodeStrict decodes every document of src. Kinds the scheme knows are decoded strictly: an
// unknown or duplicated field is an error. Every object needs apiVersion, kind and metadata.name.
func decodeStrict(source, src string) ([]object, error) {
	var out []object
	for i, doc := range splitDocs(src) {
		raw := &unstructured.Unstructured{}
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, i, err)
		}
		if err := raw.UnmarshalJSON(j); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, i, err)
		}
		gvk := raw.GroupVersionKind()
		if raw.GetName() == "" {
			return nil, fmt.Errorf("%s: %s without metadata.name", source, gvk.Kind)
		}
		o := object{source: source, gvk: gvk, raw: raw}
		if kubeScheme.Recognizes(gvk) {
			typed, _, err := strict.Decode([]byte(doc), nil, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %s %s: %w", source, gvk.Kind, raw.GetName(), err)
			}
			o.typed = typed
		}
		out = append(out, o)
	}
	return out, nil
}

// requireFields fails unless every dotted path is present and non-empty in o.
func requireFields(t *testing.T, o object, paths ...string) {
	t.Helper()
	for _, p := range paths {
		v, found, err := unstructured.NestedFieldNoCopy(o.raw.Object, strings.Split(p, ".")...)
		if err != nil || !found || v == nil || fmt.Sprint(v) == "" || fmt.Sprint(v) == "[]" || fmt.Sprint(v) == "map[]" {
			t.Errorf("%s: %s %s: missing %s", o.source, o.gvk.Kind, o.name(), p)
		}
	}
}

// find returns the objects of a kind.
func find(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.gvk.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func TestDecodeStrictRejectsUnknownFields(t *testing.T) {
	bad := "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  portz: []\n"
	if _, err := decodeStrict("bad", bad); err == nil {
		t.Fatal("an unknown field decoded without error")
	}
	badPool := "apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\nmetadata: {name: p}\nspec:\n" +
		"  selector: {app: x}\n"
	if _, err := decodeStrict("bad", badPool); err == nil {
		t.Fatal("an InferencePool with a v1alpha2-style selector decoded without error")
	}
	var buf bytes.Buffer
	buf.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\ndata: {a: b}\n")
	if objs, err := decodeStrict("good", buf.String()); err != nil || len(objs) != 1 || objs[0].typed == nil {
		t.Fatalf("decode good ConfigMap: %v %v", objs, err)
	}
}
