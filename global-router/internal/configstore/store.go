package configstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/prometheus/client_golang/prometheus"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
)

// Store reads and writes the configuration in etcd and, while Run runs, keeps a watched View of
// it. Its methods are safe for concurrent use.
type Store struct {
	client  *clientv3.Client
	logger  *slog.Logger
	metrics *metrics
	view    atomic.Pointer[View]
}

// New returns a store over client. Its collectors are registered on reg (none when reg is nil).
// Until Run has loaded the configuration, Snapshot returns an empty View that is not Loaded and
// whose Policy fails with routing.ErrPolicyNotLoaded.
func New(client *clientv3.Client, logger *slog.Logger, reg prometheus.Registerer) (*Store, error) {
	if client == nil {
		return nil, errors.New("configstore: nil etcd client")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	s := &Store{client: client, logger: logger, metrics: m}
	s.view.Store(emptyView())
	return s, nil
}

// GetPolicy returns model's stored policy with its revision, read from etcd (linearizable).
func (s *Store) GetPolicy(ctx context.Context, model string) (*adminv1.Policy, error) {
	if err := ValidateModel(model); err != nil {
		return nil, err
	}
	resp, err := s.client.Get(ctx, PolicyKey(model))
	if err != nil {
		return nil, fmt.Errorf("configstore: get policy %q: %w", model, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("%w: no policy for model %q", ErrNotFound, model)
	}
	kv := resp.Kvs[0]
	p, err := DecodePolicy(model, kv.Value, kv.ModRevision)
	if err != nil {
		return nil, unreadable(model, kv.ModRevision, err)
	}
	return p, nil
}

// unreadable is GetPolicy's error for a stored value that cannot be read: it names the model, the
// revision to replace or delete and the reason.
func unreadable(model string, rev int64, reason error) error {
	return fmt.Errorf("%w: the policy of model %q stored at revision %d: %v; requests for the model are refused "+
		"until a valid policy replaces it (put with revision %d) or it is deleted", ErrUnreadable, model, rev, reason, rev)
}

// ListPolicies returns every readable stored policy and every stored value that cannot be read
// (its model is refused), both ordered by model.
func (s *Store) ListPolicies(ctx context.Context) ([]*adminv1.Policy, []UnreadablePolicy, error) {
	resp, err := s.client.Get(
		ctx,
		PolicyPrefix,
		clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("configstore: list policies: %w", err)
	}
	out := make([]*adminv1.Policy, 0, len(resp.Kvs))
	var bad []UnreadablePolicy
	for _, kv := range resp.Kvs {
		model := strings.TrimPrefix(string(kv.Key), PolicyPrefix)
		p, err := DecodePolicy(model, kv.Value, kv.ModRevision)
		if err != nil {
			bad = append(bad, UnreadablePolicy{Model: model, Revision: kv.ModRevision, Reason: err.Error()})
			continue
		}
		out = append(out, p)
	}
	return out, bad, nil
}

// PutPolicy stores p if the stored policy's revision is expectedRevision (0: only if none is
// stored). It returns the policy as stored, with its new revision; ErrConflict when the revision
// does not match; an error wrapping ErrInvalid when p is invalid. p.Revision is ignored.
func (s *Store) PutPolicy(ctx context.Context, p *adminv1.Policy, expectedRevision int64) (*adminv1.Policy, error) {
	stored, value, err := preparePut(p, expectedRevision)
	if err != nil {
		return nil, err
	}
	key := PolicyKey(stored.GetModel())
	resp, err := s.client.Txn(ctx).
		If(revisionIs(key, expectedRevision)).
		Then(clientv3.OpPut(key, string(value))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		s.metrics.write("put_policy", "error")
		return nil, fmt.Errorf("configstore: put policy %q: %w", stored.GetModel(), err)
	}
	if !resp.Succeeded {
		s.metrics.write("put_policy", "conflict")
		return nil, conflict(stored.GetModel(), expectedRevision, resp, ErrConflict)
	}
	s.metrics.write("put_policy", "ok")
	stored.Revision = resp.Header.Revision
	return stored, nil
}

// preparePut validates a write and returns the policy to store and its encoded value.
func preparePut(p *adminv1.Policy, expectedRevision int64) (*adminv1.Policy, []byte, error) {
	if p == nil {
		return nil, nil, fmt.Errorf("%w: policy is missing", ErrInvalid)
	}
	if expectedRevision < 0 {
		return nil, nil, fmt.Errorf("%w: revision %d is negative", ErrInvalid, expectedRevision)
	}
	stored := proto.CloneOf(p)
	stored.Revision = 0
	if err := ValidatePolicy(stored); err != nil {
		return nil, nil, err
	}
	value, err := EncodePolicy(stored)
	return stored, value, err
}

// DeletePolicy removes model's policy if its revision is expectedRevision (0: whatever is
// stored). It returns ErrNotFound when none is stored and ErrConflict when the revision differs.
func (s *Store) DeletePolicy(ctx context.Context, model string, expectedRevision int64) error {
	if err := ValidateModel(model); err != nil {
		return err
	}
	if expectedRevision < 0 {
		return fmt.Errorf("%w: revision %d is negative", ErrInvalid, expectedRevision)
	}
	key := PolicyKey(model)
	cmp := clientv3.Compare(clientv3.CreateRevision(key), ">", 0)
	if expectedRevision > 0 {
		cmp = revisionIs(key, expectedRevision)
	}
	resp, err := s.client.Txn(ctx).If(cmp).Then(clientv3.OpDelete(key)).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		s.metrics.write("delete_policy", "error")
		return fmt.Errorf("configstore: delete policy %q: %w", model, err)
	}
	if !resp.Succeeded {
		s.metrics.write("delete_policy", "conflict")
		return conflict(model, expectedRevision, resp, ErrNotFound)
	}
	s.metrics.write("delete_policy", "ok")
	return nil
}

// revisionIs compares key's revision: created never (0) or last modified at rev.
func revisionIs(key string, rev int64) clientv3.Cmp {
	if rev == 0 {
		return clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	}
	return clientv3.Compare(clientv3.ModRevision(key), "=", rev)
}

// conflict explains a failed compare from the Else branch's Get; missing is the error when no
// policy is stored at all.
func conflict(model string, expected int64, resp *clientv3.TxnResponse, missing error) error {
	var current int64
	if rr := resp.Responses[0].GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
		current = rr.Kvs[0].ModRevision
	}
	switch {
	case current == 0:
		return fmt.Errorf("%w: no policy for model %q (expected revision %d)", missing, model, expected)
	case expected == 0:
		return fmt.Errorf("%w: policy for model %q already exists at revision %d", ErrConflict, model, current)
	default:
		return fmt.Errorf("%w: policy for model %q is at revision %d, not %d", ErrConflict, model, current, expected)
	}
}

// SetClusterDrain drains (drain = true) or undrains the cluster on every router. It is idempotent.
func (s *Store) SetClusterDrain(ctx context.Context, cluster string, drain bool) error {
	if err := ValidateName("cluster", cluster); err != nil {
		return err
	}
	return s.setDrain(ctx, "cluster", ClusterDrainKey(cluster), drain)
}

// SetRegionDrain drains (drain = true) or undrains the region on every router. It is idempotent.
func (s *Store) SetRegionDrain(ctx context.Context, region string, drain bool) error {
	if err := ValidateName("region", region); err != nil {
		return err
	}
	return s.setDrain(ctx, "region", RegionDrainKey(region), drain)
}

// setDrain writes the drain marker (its value: the time it was set, RFC 3339) or deletes it.
func (s *Store) setDrain(ctx context.Context, kind, key string, drain bool) error {
	var err error
	op := "undrain_" + kind
	if drain {
		op = "drain_" + kind
		_, err = s.client.Put(ctx, key, time.Now().UTC().Format(time.RFC3339))
	} else {
		_, err = s.client.Delete(ctx, key)
	}
	if err != nil {
		s.metrics.write(op, "error")
		return fmt.Errorf("configstore: %s %s: %w", strings.ReplaceAll(op, "_", " "), strings.TrimPrefix(key, Prefix), err)
	}
	s.metrics.write(op, "ok")
	return nil
}
