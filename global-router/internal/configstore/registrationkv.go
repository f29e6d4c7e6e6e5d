package configstore

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/switchyard-dev/switchyard/gossip"
)

// The etcd side of cluster and region registrations, which differ only in their message type,
// key prefix and kind ("cluster" or "region").

// keyIDs returns the key id (gossip.KeyID) of each public key.
func keyIDs(keys [][]byte) []string {
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = gossip.KeyID(k)
	}
	return ids
}

// keysByID indexes a decoded registration's public keys by their key ids.
func keysByID(keys [][]byte, ids []string) map[string]ed25519.PublicKey {
	out := make(map[string]ed25519.PublicKey, len(keys))
	for i, k := range keys {
		out[ids[i]] = ed25519.PublicKey(k)
	}
	return out
}

// putRegistrationValue stores the encoded registration of kind name at key if the stored one's
// revision is expectedRevision (0: only if none is stored) and returns the new revision;
// ErrConflict when the revision does not match.
func (s *Store) putRegistrationValue(
	ctx context.Context,
	kind, name, key string,
	value []byte,
	expectedRevision int64,
) (int64, error) {
	op := "register_" + kind
	resp, err := s.client.Txn(ctx).If(revisionIs(key, expectedRevision)).
		Then(clientv3.OpPut(key, string(value))).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		s.metrics.write(op, "error")
		return 0, fmt.Errorf("configstore: register %s %q: %w", kind, name, err)
	}
	if !resp.Succeeded {
		s.metrics.write(op, "conflict")
		return 0, registrationConflict(kind, name, expectedRevision, resp, ErrConflict)
	}
	s.metrics.write(op, "ok")
	return resp.Header.Revision, nil
}

// deleteRegistrationKey removes the registration of kind name stored at key if its revision is
// expectedRevision (0: whatever is stored); ErrNotFound when none is stored, ErrConflict when the
// revision differs.
func (s *Store) deleteRegistrationKey(ctx context.Context, kind, name, key string, expectedRevision int64) error {
	if err := ValidateName(kind, name); err != nil {
		return err
	}
	if expectedRevision < 0 {
		return fmt.Errorf("%w: revision %d is negative", ErrInvalid, expectedRevision)
	}
	op := "revoke_" + kind
	cmp := clientv3.Compare(clientv3.CreateRevision(key), ">", 0)
	if expectedRevision > 0 {
		cmp = revisionIs(key, expectedRevision)
	}
	resp, err := s.client.Txn(ctx).If(cmp).Then(clientv3.OpDelete(key)).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		s.metrics.write(op, "error")
		return fmt.Errorf("configstore: revoke %s %q: %w", kind, name, err)
	}
	if !resp.Succeeded {
		s.metrics.write(op, "conflict")
		return registrationConflict(kind, name, expectedRevision, resp, ErrNotFound)
	}
	s.metrics.write(op, "ok")
	return nil
}

// listRegistrations decodes every value stored under prefix, ordered by key; what names the list
// in errors. A value decode rejects fails the whole list.
func listRegistrations[T any](
	ctx context.Context,
	s *Store,
	prefix, what string,
	decode func(name string, value []byte, revision int64) (T, error),
) ([]T, error) {
	resp, err := s.client.Get(ctx, prefix, clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, fmt.Errorf("configstore: list %s: %w", what, err)
	}
	out := make([]T, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		r, err := decode(strings.TrimPrefix(string(kv.Key), prefix), kv.Value, kv.ModRevision)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
