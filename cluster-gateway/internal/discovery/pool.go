package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	inferenceclient "sigs.k8s.io/gateway-api-inference-extension/client-go/clientset/versioned"
	inferenceinformers "sigs.k8s.io/gateway-api-inference-extension/client-go/informers/externalversions"
	inferencelisters "sigs.k8s.io/gateway-api-inference-extension/client-go/listers/api/v1"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// PoolConfig names the InferencePool to follow (--pool-name, --pool-namespace).
type PoolConfig struct {
	// Name is the InferencePool's name.
	Name string
	// Namespace is the namespace of the pool and its pods. Default "default".
	Namespace string
	// Resync is the informers' periodic full resync; 0 disables it. Default 0 (watch events suffice).
	Resync time.Duration
	// RoleLabel is the pod label holding a pod's prefill/decode role; its value becomes the
	// endpoint's framework.RoleLabel label, which the role filters read. Default
	// framework.RoleLabel ("llm-d.ai/role", llm-d's).
	RoleLabel string
}

// DefaultPoolConfig returns the defaults; Name must still be set.
func DefaultPoolConfig() PoolConfig {
	return PoolConfig{Namespace: "default", RoleLabel: framework.RoleLabel}
}

// Validate reports the first invalid field.
func (c PoolConfig) Validate() error {
	switch {
	case c.Name == "":
		return errors.New("discovery: PoolConfig.Name (--pool-name) is empty")
	case c.Namespace == "":
		return errors.New("discovery: PoolConfig.Namespace (--pool-namespace) is empty")
	case c.Resync < 0:
		return errors.New("discovery: PoolConfig.Resync must not be negative")
	case c.RoleLabel == "":
		return errors.New("discovery: PoolConfig.RoleLabel (--role-label) is empty")
	}
	if errs := validation.IsQualifiedName(c.RoleLabel); len(errs) > 0 {
		return fmt.Errorf("discovery: PoolConfig.RoleLabel (--role-label) %q: %s", c.RoleLabel, strings.Join(errs, "; "))
	}
	return nil
}

// NewClients builds the Kubernetes and InferencePool clients from a kubeconfig file, or from the
// in-cluster service account when kubeconfig is empty.
func NewClients(kubeconfig string) (kubernetes.Interface, inferenceclient.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("discovery: kubernetes config: %w", err)
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("discovery: kubernetes client: %w", err)
	}
	inf, err := inferenceclient.NewForConfig(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("discovery: inference client: %w", err)
	}
	return kube, inf, nil
}

// Pool publishes the ready pods of a Kubernetes InferencePool, watched with informers: the pool
// (for its selector and target ports) and the pods of its namespace. Any change recomputes the set.
// A missing pool publishes an empty set (and is logged and counted).
type Pool struct {
	cfg     PoolConfig
	kube    kubernetes.Interface
	inf     inferenceclient.Interface
	dst     Syncer
	logger  *slog.Logger
	metrics *sourceMetrics
}

// NewPool returns a pool source. logger and reg may be nil.
func NewPool(cfg PoolConfig, kube kubernetes.Interface, inf inferenceclient.Interface, dst Syncer,
	logger *slog.Logger, reg prometheus.Registerer) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Pool{
		cfg:     cfg,
		kube:    kube,
		inf:     inf,
		dst:     dst,
		logger:  logger,
		metrics: newSourceMetrics("kubernetes", reg),
	}, nil
}

// Run starts the informers, publishes the initial set once their caches are synced, and then
// republishes on every change until ctx ends.
func (p *Pool) Run(ctx context.Context) error {
	kf := informers.NewSharedInformerFactoryWithOptions(p.kube, p.cfg.Resync, informers.WithNamespace(p.cfg.Namespace))
	ifac := inferenceinformers.NewSharedInformerFactoryWithOptions(
		p.inf,
		p.cfg.Resync,
		inferenceinformers.WithNamespace(p.cfg.Namespace),
	)
	podInf := kf.Core().V1().Pods()
	poolInf := ifac.Inference().V1().InferencePools()
	changed := make(chan struct{}, 1)
	if err := onChange(changed, podInf.Informer(), poolInf.Informer()); err != nil {
		return err
	}
	kf.Start(ctx.Done())
	ifac.Start(ctx.Done())
	defer func() { kf.Shutdown(); ifac.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), podInf.Informer().HasSynced, poolInf.Informer().HasSynced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("discovery: kubernetes informers did not sync")
	}
	for {
		p.publish(poolInf.Lister(), podInf.Lister())
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// onChange signals ch (coalesced) on every add, update and delete of the informers.
func onChange(ch chan struct{}, infs ...cache.SharedIndexInformer) error {
	signal := func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal() },
		UpdateFunc: func(any, any) { signal() },
		DeleteFunc: func(any) { signal() },
	}
	for _, inf := range infs {
		if _, err := inf.AddEventHandler(h); err != nil {
			return fmt.Errorf("discovery: add event handler: %w", err)
		}
	}
	return nil
}

// publish recomputes the endpoint set from the informers' caches.
func (p *Pool) publish(pools inferencelisters.InferencePoolLister, pods corelisters.PodLister) {
	pool, err := pools.InferencePools(p.cfg.Namespace).Get(p.cfg.Name)
	if err != nil {
		p.metrics.errors.Inc()
		if apierrors.IsNotFound(err) {
			p.logger.Warn("inference pool not found", "namespace", p.cfg.Namespace, "name", p.cfg.Name)
		} else {
			p.logger.Error("inference pool lookup failed", "err", err)
			return
		}
		p.dst.Sync(nil)
		return
	}
	all, err := pods.Pods(p.cfg.Namespace).List(labels.Everything())
	if err != nil {
		p.metrics.errors.Inc()
		p.logger.Error("pod list failed", "err", err)
		return
	}
	specs := PoolEndpoints(pool, all, p.cfg.RoleLabel)
	p.dst.Sync(specs)
	p.metrics.syncs.Inc()
	p.logger.Debug("inference pool endpoints", "endpoints", len(specs))
}
