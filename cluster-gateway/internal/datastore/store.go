package datastore

import (
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// EndpointSpec is one endpoint as discovery reports it: identity only, no live state.
type EndpointSpec struct {
	// Address is "host:port" of the model server; it is the endpoint's key.
	Address string
	// Name is the endpoint's name (pod name); empty means OpaqueName(Address).
	Name string
	// Engine selects the metric names; empty means vLLM.
	Engine Engine
	// Labels are the pod's labels, if any.
	Labels map[string]string
}

// Store holds the current set of endpoints. Discovery replaces the set with Sync; readers on the
// hot path take a lock-free snapshot with Endpoints. All methods are safe for concurrent use.
type Store struct {
	mu       sync.Mutex // serialises Sync and subscriber changes
	snap     atomic.Pointer[snapshot]
	onRemove []func(addr string)
	subs     map[int]chan struct{}
	nextSub  int
	logger   *slog.Logger
	metrics  *storeMetrics
	// maxEjectionPercent caps the share of the endpoints ejected at once; ejectMu serialises
	// ejection decisions (see admit).
	maxEjectionPercent int
	ejectMu            sync.Mutex
	refusalLogged      atomic.Int64 // when a refused ejection was last logged (Unix ns)
}

// StoreOption tunes a Store.
type StoreOption func(*Store)

// WithMaxEjectionPercent sets the share of the endpoints, in percent, that passive health may
// eject at once (see MaxEjected); 0 turns ejection off, 100 lets every endpoint be ejected.
// Values outside 0..100 are clamped. Default DefaultMaxEjectionPercent.
func WithMaxEjectionPercent(percent int) StoreOption {
	return func(s *Store) { s.maxEjectionPercent = min(max(percent, 0), 100) }
}

// snapshot is an immutable endpoint set.
type snapshot struct {
	list   []*Endpoint          // sorted by address
	views  []framework.Endpoint // list as framework.Endpoint values, built once per Sync
	byAddr map[string]*Endpoint
}

// NewStore returns an empty store. logger and reg may be nil (no logging, no metrics).
func NewStore(logger *slog.Logger, reg prometheus.Registerer, opts ...StoreOption) *Store {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Store{subs: make(map[int]chan struct{}), logger: logger, maxEjectionPercent: DefaultMaxEjectionPercent}
	for _, o := range opts {
		o(s)
	}
	s.snap.Store(&snapshot{byAddr: map[string]*Endpoint{}})
	s.metrics = newStoreMetrics(s, reg)
	return s
}

// Endpoints returns the current endpoints sorted by address. The slice is shared: do not modify it.
func (s *Store) Endpoints() []*Endpoint { return s.snap.Load().list }

// View returns the store as the scheduler and the capacity publisher read it.
func (s *Store) View() View { return View{s: s} }

// View is a Store as the scheduling framework sees it: the same endpoints, typed as
// framework.Endpoint, and the same removal notifications. It satisfies scheduling.EndpointSource
// and publish.View. It is safe for concurrent use.
type View struct{ s *Store }

// Endpoints returns the current endpoints sorted by address, as Store.Endpoints, without a
// per-call conversion (the slice is built once per Sync). It is shared: do not modify it.
func (v View) Endpoints() []framework.Endpoint { return v.s.snap.Load().views }

// OnRemove is Store.OnRemove.
func (v View) OnRemove(f func(addr string)) { v.s.OnRemove(f) }

// Get returns the endpoint with address addr, or nil.
func (s *Store) Get(addr string) *Endpoint { return s.snap.Load().byAddr[addr] }

// Len is the number of endpoints.
func (s *Store) Len() int { return len(s.snap.Load().list) }

// Sync replaces the endpoint set with specs. An endpoint whose address and identity (name,
// engine, labels) are unchanged keeps its live state; one whose identity changed is replaced by a
// fresh endpoint; addresses no longer listed are removed and reported to OnRemove callbacks.
// Specs with an empty address are ignored; for a repeated address the last spec wins.
func (s *Store) Sync(specs []EndpointSpec) {
	s.mu.Lock()
	old := s.snap.Load()
	next, added := s.build(old, specs)
	removed := removedFrom(old, next)
	s.snap.Store(next)
	callbacks := slices.Clone(s.onRemove)
	s.notifyLocked()
	s.mu.Unlock()

	for _, addr := range removed {
		for _, f := range callbacks {
			f(addr)
		}
	}
	if added > 0 || len(removed) > 0 {
		s.logger.Info("endpoints synced", "endpoints", len(next.list), "added", added, "removed", len(removed))
	}
}

// build returns the snapshot for specs, reusing old's endpoints whose identity is unchanged, and
// the number of endpoints created.
func (s *Store) build(old *snapshot, specs []EndpointSpec) (*snapshot, int) {
	next := &snapshot{byAddr: make(map[string]*Endpoint, len(specs))}
	added := 0
	for _, sp := range specs {
		if sp.Address == "" {
			continue
		}
		if ep := old.byAddr[sp.Address]; ep != nil && sameIdentity(ep, sp) {
			next.byAddr[sp.Address] = ep
			continue
		}
		ep := NewEndpoint(sp.Address, sp.Name, sp.Engine, maps.Clone(sp.Labels))
		ep.health.gate = s
		next.byAddr[sp.Address] = ep
		added++
	}
	next.list = slices.SortedFunc(maps.Values(next.byAddr), func(a, b *Endpoint) int {
		return strings.Compare(a.Address, b.Address)
	})
	next.views = make([]framework.Endpoint, len(next.list))
	for i, ep := range next.list {
		next.views[i] = ep
	}
	return next, added
}

// removedFrom returns the sorted addresses in old that next no longer has.
func removedFrom(old, next *snapshot) []string {
	var removed []string
	for addr := range old.byAddr {
		if next.byAddr[addr] == nil {
			removed = append(removed, addr)
		}
	}
	slices.Sort(removed)
	return removed
}

// sameIdentity reports whether ep already matches spec sp.
func sameIdentity(ep *Endpoint, sp EndpointSpec) bool {
	name, engine := sp.Name, sp.Engine
	if name == "" {
		name = OpaqueName(sp.Address)
	}
	if engine == "" {
		engine = EngineVLLM
	}
	return ep.Name == name && ep.Engine == engine && maps.Equal(ep.Labels, sp.Labels)
}

// OnRemove registers f to be called with the address of every endpoint a later Sync removes.
// Callbacks run on the Sync caller's goroutine, after the new set is visible, and must not block.
func (s *Store) OnRemove(f func(addr string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onRemove = append(s.onRemove, f)
}

// Subscribe returns a channel that receives a value after every Sync (coalesced: one pending
// signal at most) and a cancel function that stops the subscription. The receiver should re-read
// Endpoints on each signal.
func (s *Store) Subscribe() (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextSub
	s.nextSub++
	ch := make(chan struct{}, 1)
	s.subs[id] = ch
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.subs, id)
	}
}

// notifyLocked signals every subscriber without blocking. Callers hold mu.
func (s *Store) notifyLocked() {
	for _, ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Models returns the sorted union of the base models and adapters served by the endpoints whose
// model list is known. Ejection and stale metrics do not remove a model: those pods are
// temporarily unusable, not gone, and the model still exists (requests get 503, not 404).
func (s *Store) Models() []string {
	seen := make(map[string]struct{})
	for _, ep := range s.Endpoints() {
		m := ep.Models()
		if m == nil {
			continue
		}
		if m.Base != "" {
			seen[m.Base] = struct{}{}
		}
		for _, a := range m.Adapters {
			seen[a] = struct{}{}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}
