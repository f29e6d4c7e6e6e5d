package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
)

// fakeKube is a Kubernetes API server over HTTP for one namespace's pods and InferencePools:
// list, watch (with the initial events of a watch list, as client-go asks by default) and
// events pushed to open watches when a pod changes. It serves JSON only.
type fakeKube struct {
	srv       *httptest.Server
	namespace string

	mu       sync.Mutex
	rv       int
	pods     map[string]*corev1.Pod
	pools    map[string]*inferencev1.InferencePool
	watchers map[string][]chan watchEvent // by resource: "pods", "inferencepools"
}

type watchEvent struct {
	Type   string `json:"type"`
	Object any    `json:"object"`
}

func newFakeKube(t *testing.T, namespace string) *fakeKube {
	t.Helper()
	k := &fakeKube{namespace: namespace, pods: map[string]*corev1.Pod{}, pools: map[string]*inferencev1.InferencePool{},
		watchers: map[string][]chan watchEvent{}}
	mux := http.NewServeMux()
	mux.HandleFunc(
		"GET /api/v1/namespaces/{ns}/pods",
		func(w http.ResponseWriter, r *http.Request) { k.serve(w, r, "pods") },
	)
	mux.HandleFunc(
		"GET /apis/inference.networking.k8s.io/v1/namespaces/{ns}/inferencepools",
		func(w http.ResponseWriter, r *http.Request) {
			k.serve(w, r, "inferencepools")
		},
	)
	k.srv = httptest.NewServer(mux)
	t.Cleanup(k.srv.Close)
	return k
}

// kubeconfig writes a kubeconfig file that points at the server.
func (k *fakeKube) kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {server: %q}
users:
- name: test
  user: {token: test}
contexts:
- name: fake
  context: {cluster: fake, user: test}
current-context: fake
`, k.srv.URL)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// setPool stores an InferencePool.
func (k *fakeKube) setPool(p *inferencev1.InferencePool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p.APIVersion, p.Kind = "inference.networking.k8s.io/v1", "InferencePool"
	k.rv++
	p.ResourceVersion = strconv.Itoa(k.rv)
	_, existed := k.pools[p.Name]
	k.pools[p.Name] = p
	k.notify("inferencepools", existed, p)
}

// setPod stores a pod and tells the pods' watchers.
func (k *fakeKube) setPod(p *corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p.APIVersion, p.Kind = "v1", "Pod"
	k.rv++
	p.ResourceVersion = strconv.Itoa(k.rv)
	_, existed := k.pods[p.Name]
	k.pods[p.Name] = p
	k.notify("pods", existed, p)
}

func (k *fakeKube) notify(resource string, existed bool, obj any) {
	typ := "ADDED"
	if existed {
		typ = "MODIFIED"
	}
	for _, ch := range k.watchers[resource] {
		select {
		case ch <- watchEvent{Type: typ, Object: obj}:
		default: // a stuck watcher misses it; tests keep few events
		}
	}
}

// snapshot returns a resource's objects and the current resource version.
func (k *fakeKube) snapshot(resource string) ([]any, string) {
	var items []any
	if resource == "pods" {
		for _, p := range k.pods {
			items = append(items, p)
		}
	} else {
		for _, p := range k.pools {
			items = append(items, p)
		}
	}
	return items, strconv.Itoa(k.rv)
}

func (k *fakeKube) serve(w http.ResponseWriter, r *http.Request, resource string) {
	if r.PathValue("ns") != k.namespace {
		http.Error(w, "forbidden namespace", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
		k.watch(w, r, resource)
		return
	}
	k.mu.Lock()
	items, rv := k.snapshot(resource)
	k.mu.Unlock()
	kind, apiVersion := "PodList", "v1"
	if resource == "inferencepools" {
		kind, apiVersion = "InferencePoolList", "inference.networking.k8s.io/v1"
	}
	if items == nil {
		items = []any{}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": kind, "apiVersion": apiVersion,
		"metadata": metav1.ListMeta{ResourceVersion: rv}, "items": items})
}

// watch streams events until the client leaves; a watch list first gets every object and the
// bookmark that ends the initial events.
func (k *fakeKube) watch(w http.ResponseWriter, r *http.Request, resource string) {
	ch := make(chan watchEvent, 64)
	k.mu.Lock()
	items, rv := k.snapshot(resource)
	k.watchers[resource] = append(k.watchers[resource], ch)
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		ws := k.watchers[resource]
		for i, c := range ws {
			if c == ch {
				k.watchers[resource] = append(ws[:i], ws[i+1:]...)
				break
			}
		}
	}()
	enc := json.NewEncoder(w)
	if r.URL.Query().Get("sendInitialEvents") == "true" {
		for _, obj := range items {
			_ = enc.Encode(watchEvent{Type: "ADDED", Object: obj})
		}
		bookmark := map[string]any{"kind": "Pod", "apiVersion": "v1", "metadata": map[string]any{"resourceVersion": rv,
			"annotations": map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
		if resource == "inferencepools" {
			bookmark["kind"], bookmark["apiVersion"] = "InferencePool", "inference.networking.k8s.io/v1"
		}
		_ = enc.Encode(watchEvent{Type: "BOOKMARK", Object: bookmark})
	}
	w.(http.Flusher).Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev := <-ch:
			if err := enc.Encode(ev); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}
