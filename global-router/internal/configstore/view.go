package configstore

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

// View is an immutable snapshot of the configuration at one etcd revision. The data path reads it
// without locks; values it returns must not be modified. A newer View replaces it when the
// configuration changes; Replaced tells when.
type View struct {
	revision int64
	policies map[string]policyEntry
	// unreadable holds the models whose stored policy value cannot be read: they are refused.
	unreadable map[string]UnreadablePolicy
	clusters   map[string]struct{} // drained clusters
	regions    map[string]struct{} // drained regions
	// registrations are the cluster registrations by cluster; registrationsRevision is the etcd
	// revision of their last change (0: none loaded).
	registrations         map[string]Registration
	registrationsRevision int64
	// invalidRegistrations holds the clusters whose stored registration value cannot be read:
	// their summaries are refused (the cluster counts as registered, so identity is strict).
	invalidRegistrations map[string]InvalidRegistration
	// regionRegistrations are the region registrations by region (invalid ones marked); their
	// changes move registrationsRevision too.
	regionRegistrations map[string]RegionRegistration
	// tenants are the readable stored tenants by name; unreadableTenants the names whose stored
	// value cannot be read (refused); keys the API key digests (hex) by tenant, and keyList the
	// same, decoded, for the constant-time lookup.
	tenants           map[string]*adminv1.Tenant
	unreadableTenants map[string]UnreadableTenant
	keys              map[string]string
	keyList           []keyEntry
	replaced          chan struct{}
}

// InvalidRegistration is a stored registration value that does not decode or validate (written
// to etcd around the admin API). Its cluster is neither trusted with the registration it
// replaced nor left unchecked: routers reject the cluster's summaries until the value is replaced
// by a valid one or deleted.
type InvalidRegistration struct {
	// Cluster is the cluster named by the key.
	Cluster string
	// Revision is the etcd revision at which the value was written.
	Revision int64
	// Reason says why the value cannot be read.
	Reason string
}

type policyEntry struct {
	stored  *adminv1.Policy
	routing routing.Policy
}

// UnreadablePolicy is a stored policy value that does not decode or is not a valid policy for
// its key's model (written to etcd around the admin API). Its model is refused until the value
// is replaced by a valid one or deleted.
type UnreadablePolicy struct {
	// Model is the model named by the key.
	Model string
	// Revision is the etcd revision at which the value was written (what a PutPolicy replacing
	// it or a DeletePolicy of it must name).
	Revision int64
	// Reason says why the value cannot be read.
	Reason string
}

func emptyView() *View {
	return &View{
		policies:   map[string]policyEntry{},
		unreadable: map[string]UnreadablePolicy{},
		clusters:   map[string]struct{}{},
		regions:    map[string]struct{}{},
		replaced:   make(chan struct{}),

		registrations:        map[string]Registration{},
		invalidRegistrations: map[string]InvalidRegistration{},
		regionRegistrations:  map[string]RegionRegistration{},

		tenants:           map[string]*adminv1.Tenant{},
		unreadableTenants: map[string]UnreadableTenant{},
		keys:              map[string]string{},
	}
}

// clone returns a writable copy at revision rev for the next view.
func (v *View) clone(rev int64) *View {
	return &View{
		revision:   rev,
		policies:   maps.Clone(v.policies),
		unreadable: maps.Clone(v.unreadable),
		clusters:   maps.Clone(v.clusters),
		regions:    maps.Clone(v.regions),
		replaced:   make(chan struct{}),

		registrations:         maps.Clone(v.registrations),
		registrationsRevision: v.registrationsRevision,
		invalidRegistrations:  maps.Clone(v.invalidRegistrations),
		regionRegistrations:   maps.Clone(v.regionRegistrations),

		tenants:           maps.Clone(v.tenants),
		unreadableTenants: maps.Clone(v.unreadableTenants),
		keys:              maps.Clone(v.keys),
	}
}

// Revision is the etcd revision the view reflects; 0 until the configuration has been loaded.
func (v *View) Revision() int64 { return v.revision }

// Loaded reports whether the view reflects etcd (false for the empty view before the first load).
func (v *View) Loaded() bool { return v.revision > 0 }

// Replaced returns a channel closed when a newer view has replaced this one.
func (v *View) Replaced() <-chan struct{} { return v.replaced }

// Policy returns model's routing policy: the stored one with defaults for unset fields, or
// routing.DefaultPolicy() when none is stored. It fails closed: before the configuration has been
// loaded it returns an error wrapping routing.ErrPolicyNotLoaded, and for a model whose stored
// value cannot be read one wrapping routing.ErrPolicyUnreadable that names the key, the revision
// and the reason; the policy returned with an error must not be used. Its AllowedRegions must not
// be modified.
func (v *View) Policy(model string) (routing.Policy, error) {
	if !v.Loaded() {
		return routing.Policy{}, routing.ErrPolicyNotLoaded
	}
	if u, ok := v.unreadable[model]; ok {
		return routing.Policy{}, fmt.Errorf(
			"%w: %s at revision %d: %s",
			routing.ErrPolicyUnreadable,
			PolicyKey(model),
			u.Revision,
			u.Reason,
		)
	}
	if e, ok := v.policies[model]; ok {
		return e.routing, nil
	}
	return routing.DefaultPolicy(), nil
}

// Unreadable returns model's stored value that cannot be read, if there is one.
func (v *View) Unreadable(model string) (UnreadablePolicy, bool) {
	u, ok := v.unreadable[model]
	return u, ok
}

// UnreadablePolicies returns every stored policy value that cannot be read, ordered by model.
func (v *View) UnreadablePolicies() []UnreadablePolicy {
	return valuesByKey(v.unreadable)
}

// StoredPolicy returns a copy of model's stored policy with its revision, if one is stored.
func (v *View) StoredPolicy(model string) (*adminv1.Policy, bool) {
	e, ok := v.policies[model]
	if !ok {
		return nil, false
	}
	return proto.CloneOf(e.stored), true
}

// Models returns the models that have a readable stored policy, sorted.
func (v *View) Models() []string { return slices.Sorted(maps.Keys(v.policies)) }

// ClusterDrained reports whether the cluster itself is drained.
func (v *View) ClusterDrained(cluster string) bool {
	_, ok := v.clusters[cluster]
	return ok
}

// RegionDrained reports whether the region is drained.
func (v *View) RegionDrained(region string) bool {
	_, ok := v.regions[region]
	return ok
}

// Drained reports whether a cluster in region is drained, itself or through its region.
func (v *View) Drained(cluster, region string) bool {
	return v.ClusterDrained(cluster) || v.RegionDrained(region)
}

// DrainedClusters returns the drained clusters, sorted.
func (v *View) DrainedClusters() []string { return slices.Sorted(maps.Keys(v.clusters)) }

// DrainedRegions returns the drained regions, sorted.
func (v *View) DrainedRegions() []string { return slices.Sorted(maps.Keys(v.regions)) }

// Registration returns cluster's registration, if it is registered.
func (v *View) Registration(cluster string) (Registration, bool) {
	r, ok := v.registrations[cluster]
	return r, ok
}

// RegistrationCount returns the number of registered clusters (valid registrations only).
func (v *View) RegistrationCount() int { return len(v.registrations) }

// InvalidRegistration returns cluster's stored registration value that cannot be read, if there
// is one.
func (v *View) InvalidRegistration(cluster string) (InvalidRegistration, bool) {
	r, ok := v.invalidRegistrations[cluster]
	return r, ok
}

// InvalidRegistrations returns every stored registration value that cannot be read, ordered by
// cluster.
func (v *View) InvalidRegistrations() []InvalidRegistration {
	return valuesByKey(v.invalidRegistrations)
}

// Registrations returns every registration, ordered by cluster. The values must not be modified.
func (v *View) Registrations() []*adminv1.ClusterRegistration {
	out := make([]*adminv1.ClusterRegistration, 0, len(v.registrations))
	for _, c := range slices.Sorted(maps.Keys(v.registrations)) {
		out = append(out, v.registrations[c].Stored)
	}
	return out
}

// RegistrationsRevision is the etcd revision at which the registrations last changed in this
// view's history (0 while none has been loaded); it changes exactly when they may have.
func (v *View) RegistrationsRevision() int64 { return v.registrationsRevision }

// Snapshot returns the current view. It never blocks and never returns nil.
func (s *Store) Snapshot() *View { return s.view.Load() }

// publish makes next the current view and wakes the waiters on the previous one. Only Run's
// goroutine publishes.
func (s *Store) publish(next *View) {
	next.indexKeys()
	prev := s.view.Swap(next)
	close(prev.replaced)
	s.metrics.revision.Set(float64(next.revision))
	s.metrics.policies.Set(float64(len(next.policies)))
	s.metrics.unreadable.Set(float64(len(next.unreadable)))
	s.metrics.registrations.Set(float64(len(next.registrations)))
	s.metrics.invalidRegistrations.Set(float64(len(next.invalidRegistrations)))
}

// valuesByKey returns m's values ordered by their keys.
func valuesByKey[K cmp.Ordered, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}
