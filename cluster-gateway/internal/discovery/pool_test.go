package discovery_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	inferencefake "sigs.k8s.io/gateway-api-inference-extension/client-go/clientset/versioned/fake"

	"github.com/switchyard-dev/switchyard/contract/poll"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/discovery"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

const ns = "inference"

func testPool(ports ...int32) *inferencev1.InferencePool {
	p := &inferencev1.InferencePool{
		ObjectMeta: metav1.ObjectMeta{Name: "llama", Namespace: ns},
		Spec: inferencev1.InferencePoolSpec{
			Selector: inferencev1.LabelSelector{MatchLabels: map[inferencev1.LabelKey]inferencev1.LabelValue{"app": "llama"}},
		},
	}
	for _, n := range ports {
		p.Spec.TargetPorts = append(p.Spec.TargetPorts, inferencev1.Port{Number: inferencev1.PortNumber(n)})
	}
	return p
}

// testPod returns a running pod; ready sets its Ready condition.
func testPod(name, ip string, ready bool, lbls map[string]string) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbls},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
		},
	}
}

var llama = map[string]string{"app": "llama"}

func TestPoolEndpoints(t *testing.T) {
	deleting := testPod("deleting", "10.0.0.9", true, llama)
	deleting.DeletionTimestamp = &metav1.Time{}
	pending := testPod("pending", "10.0.0.8", true, llama)
	pending.Status.Phase = corev1.PodPending
	noCond := testPod("nocond", "10.0.0.7", true, llama)
	noCond.Status.Conditions = nil
	tests := []struct {
		name  string
		pool  *inferencev1.InferencePool
		pods  []*corev1.Pod
		want  []string
		names []string
	}{
		{"ready pods only", testPool(8000), []*corev1.Pod{
			testPod("a", "10.0.0.1", true, llama),
			testPod("b", "10.0.0.2", false, llama),
			testPod("c", "", true, llama),
			testPod("other", "10.0.0.3", true, map[string]string{"app": "qwen"}),
			deleting, pending, noCond,
		}, []string{"10.0.0.1:8000"}, []string{"a"}},
		{"several target ports", testPool(8000, 8001), []*corev1.Pod{testPod("a", "10.0.0.1", true, llama)},
			[]string{"10.0.0.1:8000", "10.0.0.1:8001"}, []string{"a-rank-0", "a-rank-1"}},
		{"ipv6", testPool(8000), []*corev1.Pod{testPod("a", "fd00::1", true, llama)},
			[]string{"[fd00::1]:8000"}, []string{"a"}},
		{"empty selector selects nothing", func() *inferencev1.InferencePool {
			p := testPool(8000)
			p.Spec.Selector.MatchLabels = nil
			return p
		}(), []*corev1.Pod{testPod("a", "10.0.0.1", true, nil)}, nil, nil},
		{"no ports", testPool(), []*corev1.Pod{testPod("a", "10.0.0.1", true, llama)}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			specs := discovery.PoolEndpoints(tt.pool, tt.pods, framework.RoleLabel)
			var addrs, names []string
			for _, s := range specs {
				addrs = append(addrs, s.Address)
				names = append(names, s.Name)
			}
			if !slices.Equal(addrs, tt.want) || !slices.Equal(names, tt.names) {
				t.Fatalf("got %v %v, want %v %v", addrs, names, tt.want, tt.names)
			}
		})
	}
}

func TestPoolEngineLabel(t *testing.T) {
	tests := map[string]datastore.Engine{
		"": datastore.EngineVLLM, "vllm": datastore.EngineVLLM, "sglang": datastore.EngineSGLang,
		"TRTLLM": datastore.EngineTRTLLM, "tgi": datastore.EngineVLLM,
	}
	for label, want := range tests {
		t.Run(label, func(t *testing.T) {
			lbls := map[string]string{"app": "llama"}
			if label != "" {
				lbls[discovery.EngineLabel] = label
			}
			specs := discovery.PoolEndpoints(testPool(8000), []*corev1.Pod{testPod("a", "10.0.0.1", true, lbls)},
				framework.RoleLabel)
			if len(specs) != 1 || specs[0].Engine != want || specs[0].Labels["app"] != "llama" {
				t.Fatalf("got %+v, want engine %q", specs, want)
			}
		})
	}
}

// watchStarted returns a channel closed once the fake client has served a watch on resource.
func watchStarted(c interface {
	PrependWatchReactor(string, k8stesting.WatchReactionFunc)
}, resource string) <-chan struct{} {
	ch := make(chan struct{})
	var once sync.Once
	c.PrependWatchReactor(resource, func(k8stesting.Action) (bool, watch.Interface, error) {
		once.Do(func() { close(ch) })
		return false, nil, nil
	})
	return ch
}

func TestPoolRun(t *testing.T) {
	kube := kubefake.NewClientset(testPod("a", "10.0.0.1", true, llama), testPod("b", "10.0.0.2", false, llama))
	inf := inferencefake.NewSimpleClientset(testPool(8000))
	podsWatched, poolsWatched := watchStarted(kube, "pods"), watchStarted(inf, "inferencepools")
	store := datastore.NewStore(nil, nil)
	cfg := discovery.DefaultPoolConfig()
	cfg.Name, cfg.Namespace = "llama", ns
	src, err := discovery.NewPool(cfg, kube, inf, store, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	storeHas := func(want ...string) func() bool {
		return func() bool {
			var got []string
			for _, ep := range store.Endpoints() {
				got = append(got, ep.Address)
			}
			return slices.Equal(got, want)
		}
	}
	poll.Until(t, waitTimeout, storeHas("10.0.0.1:8000"), "initial pods")
	<-podsWatched
	<-poolsWatched

	pods := kube.CoreV1().Pods(ns)
	if _, err := pods.UpdateStatus(ctx, testPod("b", "10.0.0.2", true, llama), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitTimeout, storeHas("10.0.0.1:8000", "10.0.0.2:8000"), "pod b ready")

	if err := pods.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitTimeout, storeHas("10.0.0.2:8000"), "pod a deleted")

	pools := inf.InferenceV1().InferencePools(ns)
	if _, err := pools.Update(ctx, testPool(9000), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitTimeout, storeHas("10.0.0.2:9000"), "target port changed")

	if err := pools.Delete(ctx, "llama", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitTimeout, storeHas(), "pool deleted")
}

func TestPoolConfigValidate(t *testing.T) {
	if err := (discovery.PoolConfig{Namespace: "x"}).Validate(); err == nil {
		t.Fatal("empty name accepted")
	}
	if err := (discovery.PoolConfig{Name: "x"}).Validate(); err == nil {
		t.Fatal("empty namespace accepted")
	}
	if _, err := discovery.NewPool(
		discovery.PoolConfig{},
		kubefake.NewClientset(),
		inferencefake.NewSimpleClientset(),
		nil,
		nil,
		nil,
	); err == nil {
		t.Fatal("NewPool accepted an invalid config")
	}
}

var _ runtime.Object = (*inferencev1.InferencePool)(nil)

// TestPoolRoleLabel: a pod's prefill/decode role comes from the configured label, llm-d's
// llm-d.ai/role unless set otherwise, and reaches the endpoint as framework.RoleLabel (where
// the role filters read it); with another key, a pod's own llm-d.ai/role is not its role.
func TestPoolRoleLabel(t *testing.T) {
	tests := []struct {
		name, key string
		labels    map[string]string
		want      string // the endpoint's framework.RoleLabel value; "-" for none
	}{
		{"llm-d's label", framework.RoleLabel, map[string]string{framework.RoleLabel: "prefill"}, "prefill"},
		{"llm-d's label, none set", framework.RoleLabel, nil, "-"},
		{"own key", "example.com/pd-role", map[string]string{"example.com/pd-role": "decode"}, "decode"},
		{"own key wins over llm-d's", "example.com/pd-role",
			map[string]string{"example.com/pd-role": "both", framework.RoleLabel: "prefill"}, "both"},
		{"own key unset: no role", "example.com/pd-role", map[string]string{framework.RoleLabel: "prefill"}, "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lbls := map[string]string{"app": "llama"}
			for k, v := range tt.labels {
				lbls[k] = v
			}
			kube := kubefake.NewClientset(testPod("a", "10.0.0.1", true, lbls))
			inf := inferencefake.NewSimpleClientset(testPool(8000))
			store := datastore.NewStore(nil, nil)
			cfg := discovery.DefaultPoolConfig()
			cfg.Name, cfg.Namespace, cfg.RoleLabel = "llama", ns, tt.key
			src, err := discovery.NewPool(cfg, kube, inf, store, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- src.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			}()
			poll.Until(t, waitTimeout, func() bool { return len(store.Endpoints()) == 1 }, "the pod")
			meta := store.Endpoints()[0].Meta()
			got, ok := meta.Labels[framework.RoleLabel]
			if !ok {
				got = "-"
			}
			if got != tt.want || meta.Labels["app"] != "llama" {
				t.Fatalf("role label %q (labels %v), want %q", got, meta.Labels, tt.want)
			}
			roles := map[string]framework.Role{"prefill": framework.RolePrefill, "decode": framework.RoleDecode}
			if want := roles[tt.want]; framework.RoleOf(meta) != want {
				t.Fatalf("RoleOf = %v, want %v", framework.RoleOf(meta), want)
			}
		})
	}
}

func TestPoolRoleLabelValidate(t *testing.T) {
	for _, key := range []string{"", "not a label", "-x"} {
		cfg := discovery.DefaultPoolConfig()
		cfg.Name, cfg.RoleLabel = "llama", key
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "RoleLabel") {
			t.Errorf("role label %q: err = %v", key, err)
		}
	}
}
