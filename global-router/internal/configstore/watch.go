package configstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Timing of the watch loop.
const (
	loadTimeout = 5 * time.Second
	minBackoff  = 100 * time.Millisecond
	maxBackoff  = 5 * time.Second
)

// Run loads the configuration, publishes it as a View, then watches the prefix and publishes each
// change, resuming from the last revision it applied. On compaction or a watch error it loads
// everything again, retrying with backoff while etcd is away; meanwhile Snapshot keeps returning
// the last good view. Run returns nil when ctx is done.
func (s *Store) Run(ctx context.Context) error {
	backoff := minBackoff
	for {
		rev, err := s.load(ctx)
		if err == nil {
			backoff = minBackoff
			err = s.watch(ctx, rev+1)
		}
		if ctx.Err() != nil {
			return nil
		}
		s.metrics.reloads.Inc()
		if s.view.Load().Loaded() {
			s.logger.Warn("config watch interrupted, reloading", "err", err, "backoff", backoff)
		} else {
			s.logger.Warn("config not loaded yet, routing policies unavailable", "err", err, "backoff", backoff)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// load reads every key under the prefix, publishes the view and returns its revision.
func (s *Store) load(ctx context.Context) (int64, error) {
	lctx, cancel := context.WithTimeout(ctx, loadTimeout)
	defer cancel()
	resp, err := s.client.Get(lctx, Prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("configstore: load: %w", err)
	}
	prev := s.view.Load()
	next := emptyView()
	next.revision = resp.Header.Revision
	// A reload may have missed deletions: count the registrations as changed.
	next.registrationsRevision = next.revision
	for _, kv := range resp.Kvs {
		s.put(next, prev, string(kv.Key), kv.Value, kv.ModRevision)
	}
	s.publish(next)
	s.logger.Info(
		"config loaded",
		"revision",
		next.revision,
		"policies",
		len(next.policies),
		"drained_clusters",
		len(next.clusters),
		"drained_regions",
		len(next.regions),
		"registrations",
		len(next.registrations),
		"tenants",
		len(next.tenants),
	)
	return next.revision, nil
}

// watch applies changes from revision from on until the watch fails or ctx is done. A watch
// that requires a leader is cancelled when its etcd member loses the quorum, so the client moves
// to a member that has one.
func (s *Store) watch(ctx context.Context, from int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := s.client.Watch(wctx, Prefix, clientv3.WithPrefix(), clientv3.WithRev(from))
	for resp := range wch {
		if resp.CompactRevision != 0 {
			return fmt.Errorf("configstore: watch compacted at revision %d", resp.CompactRevision)
		}
		if err := resp.Err(); err != nil {
			return fmt.Errorf("configstore: watch: %w", err)
		}
		if len(resp.Events) > 0 {
			s.apply(resp.Events, resp.Header.Revision)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("configstore: watch closed")
}

// apply publishes a new view with events applied on top of the current one.
func (s *Store) apply(events []*clientv3.Event, rev int64) {
	prev := s.view.Load()
	next := prev.clone(rev)
	for _, ev := range events {
		key := string(ev.Kv.Key)
		if ev.Type == mvccpb.DELETE {
			s.remove(next, key)
			continue
		}
		s.put(next, prev, key, ev.Kv.Value, ev.Kv.ModRevision)
	}
	s.publish(next)
	s.metrics.events.Add(float64(len(events)))
	s.metrics.lastApplied.SetToCurrentTime()
}

// put applies one stored key to next. A policy value that cannot be read makes its model
// unreadable (refused), whatever policy it had before: an older policy may be looser than the one
// that was meant to replace it.
func (s *Store) put(next, prev *View, key string, value []byte, modRev int64) {
	switch {
	case strings.HasPrefix(key, PolicyPrefix):
		model := strings.TrimPrefix(key, PolicyPrefix)
		p, err := DecodePolicy(model, value, modRev)
		if err != nil {
			s.markUnreadable(next, prev, key, UnreadablePolicy{Model: model, Revision: modRev, Reason: err.Error()})
			return
		}
		if _, was := prev.unreadable[model]; was {
			s.logger.Info("stored policy readable again, model routed with it", "key", key, "revision", modRev)
		}
		delete(next.unreadable, model)
		next.policies[model] = policyEntry{stored: p, routing: RoutingPolicy(p)}
	case strings.HasPrefix(key, ClusterDrainPrefix):
		next.clusters[strings.TrimPrefix(key, ClusterDrainPrefix)] = struct{}{}
	case strings.HasPrefix(key, RegionDrainPrefix):
		next.regions[strings.TrimPrefix(key, RegionDrainPrefix)] = struct{}{}
	case strings.HasPrefix(key, ClusterPrefix):
		s.putRegistration(next, prev, strings.TrimPrefix(key, ClusterPrefix), value, modRev)
	case strings.HasPrefix(key, RegionPrefix):
		s.putRegionRegistration(next, prev, strings.TrimPrefix(key, RegionPrefix), value, modRev)
	case strings.HasPrefix(key, TenantPrefix):
		s.putTenant(next, prev, strings.TrimPrefix(key, TenantPrefix), value, modRev)
	}
}

// markUnreadable records u in next, replacing the model's policy, and counts and logs it unless
// prev already held the same value (a reload reads it again).
func (s *Store) markUnreadable(next, prev *View, key string, u UnreadablePolicy) {
	delete(next.policies, u.Model)
	next.unreadable[u.Model] = u
	if old, ok := prev.unreadable[u.Model]; ok && old.Revision == u.Revision {
		return
	}
	s.metrics.invalid.Inc()
	s.logger.Warn(
		"stored policy unreadable, model refused until it is fixed",
		"key",
		key,
		"revision",
		u.Revision,
		"reason",
		u.Reason,
	)
}

// putRegistration applies one stored registration to next. An invalid value fails closed: the
// cluster's previous registration (it may have allowed other URLs, models or keys) is dropped and
// the cluster is recorded as invalid, so routers reject its summaries until the value is fixed or
// deleted. It is counted and logged once per written value (a reload reads it again silently).
func (s *Store) putRegistration(next, prev *View, cluster string, value []byte, modRev int64) {
	next.registrationsRevision = max(next.registrationsRevision, modRev)
	r, err := DecodeRegistration(cluster, value, modRev)
	if err != nil {
		delete(next.registrations, cluster)
		next.invalidRegistrations[cluster] = InvalidRegistration{Cluster: cluster, Revision: modRev, Reason: err.Error()}
		if old, ok := prev.invalidRegistrations[cluster]; ok && old.Revision == modRev {
			return
		}
		s.metrics.invalid.Inc()
		s.logger.Warn("stored registration invalid, cluster's summaries rejected until it is fixed",
			"key", ClusterKey(cluster), "revision", modRev, "err", err)
		return
	}
	if _, was := prev.invalidRegistrations[cluster]; was {
		s.logger.Info("stored registration valid again", "key", ClusterKey(cluster), "revision", modRev)
	}
	delete(next.invalidRegistrations, cluster)
	next.registrations[cluster] = newRegistration(r)
}

// remove applies the deletion of one key to next.
func (s *Store) remove(next *View, key string) {
	switch {
	case strings.HasPrefix(key, PolicyPrefix):
		model := strings.TrimPrefix(key, PolicyPrefix)
		if _, was := next.unreadable[model]; was {
			s.logger.Info("unreadable policy deleted, model back to the defaults", "key", key)
		}
		delete(next.policies, model)
		delete(next.unreadable, model)
	case strings.HasPrefix(key, ClusterDrainPrefix):
		delete(next.clusters, strings.TrimPrefix(key, ClusterDrainPrefix))
	case strings.HasPrefix(key, RegionDrainPrefix):
		delete(next.regions, strings.TrimPrefix(key, RegionDrainPrefix))
	case strings.HasPrefix(key, ClusterPrefix):
		delete(next.registrations, strings.TrimPrefix(key, ClusterPrefix))
		delete(next.invalidRegistrations, strings.TrimPrefix(key, ClusterPrefix))
		next.registrationsRevision = next.revision
	case strings.HasPrefix(key, RegionPrefix):
		delete(next.regionRegistrations, strings.TrimPrefix(key, RegionPrefix))
		next.registrationsRevision = next.revision
	case strings.HasPrefix(key, TenantPrefix):
		next.dropTenant(strings.TrimPrefix(key, TenantPrefix))
	}
}
