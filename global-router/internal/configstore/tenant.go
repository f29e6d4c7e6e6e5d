package configstore

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
)

// TenantPrefix + name holds a tenant's limits and API key digests (protobuf JSON of
// switchyard.admin.v1.Tenant).
const TenantPrefix = Prefix + "tenants/"

// Bounds of a tenant's limits and keys.
const (
	// MaxTokensPerMinute bounds Tenant.tokens_per_minute.
	MaxTokensPerMinute = 1_000_000_000_000
	// MaxRequestsPerSecond bounds Tenant.requests_per_second.
	MaxRequestsPerSecond = 1_000_000
	// MaxConcurrent bounds Tenant.max_concurrent.
	MaxConcurrent = 1_000_000
	// MaxAPIKeys bounds the API key digests of one tenant.
	MaxAPIKeys = 16
)

// TenantKey returns the key of tenant name.
func TenantKey(name string) string { return TenantPrefix + name }

// ValidateTenant checks t and returns an error wrapping ErrInvalid that names the first bad field.
func ValidateTenant(t *adminv1.Tenant) error {
	if t == nil {
		return fmt.Errorf("%w: tenant is missing", ErrInvalid)
	}
	if err := ValidateName("tenant", t.GetName()); err != nil {
		return fmt.Errorf("name: %w", err)
	}
	if v := t.GetTokensPerMinute(); v < 0 || v > MaxTokensPerMinute {
		return fmt.Errorf("%w: tokens_per_minute %d is outside [0, %d]", ErrInvalid, v, int64(MaxTokensPerMinute))
	}
	if v := t.GetRequestsPerSecond(); math.IsNaN(v) || v < 0 || v > MaxRequestsPerSecond {
		return fmt.Errorf("%w: requests_per_second %v is outside [0, %d]", ErrInvalid, v, MaxRequestsPerSecond)
	}
	if v := t.GetMaxConcurrent(); v < 0 || v > MaxConcurrent {
		return fmt.Errorf("%w: max_concurrent %d is outside [0, %d]", ErrInvalid, v, MaxConcurrent)
	}
	if t.GetRevision() < 0 {
		return fmt.Errorf("%w: revision %d is negative", ErrInvalid, t.GetRevision())
	}
	return validateDigests(t.GetApiKeySha256())
}

// validateDigests checks API key digests: at most MaxAPIKeys, each 64 lower-case hex digits,
// none twice.
func validateDigests(ds []string) error {
	if len(ds) > MaxAPIKeys {
		return fmt.Errorf("%w: api_key_sha256: %d listed, at most %d", ErrInvalid, len(ds), MaxAPIKeys)
	}
	for i, d := range ds {
		if err := ValidateKeyDigest(d); err != nil {
			return fmt.Errorf("api_key_sha256[%d]: %w", i, err)
		}
		if slices.Contains(ds[:i], d) {
			return fmt.Errorf("%w: api_key_sha256[%d] is listed twice", ErrInvalid, i)
		}
	}
	return nil
}

// ValidateKeyDigest checks one API key digest: a SHA-256 in 64 lower-case hex digits.
func ValidateKeyDigest(d string) error {
	if len(d) != 64 || strings.ToLower(d) != d {
		return fmt.Errorf(
			"%w: an API key digest is 64 lower-case hex digits (SHA-256), got %d characters",
			ErrInvalid,
			len(d),
		)
	}
	if _, err := hex.DecodeString(d); err != nil {
		return fmt.Errorf("%w: an API key digest is 64 lower-case hex digits (SHA-256): %v", ErrInvalid, err)
	}
	return nil
}

// EncodeTenant returns the stored form of t: protobuf JSON with the proto field names, without
// the revision. t must be valid.
func EncodeTenant(t *adminv1.Tenant) ([]byte, error) {
	c := proto.CloneOf(t)
	c.Revision = 0
	b, err := encodeOptions.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("configstore: encode tenant %q: %w", t.GetName(), err)
	}
	return b, nil
}

// DecodeTenant parses the stored value of tenant name written at revision. A value that is not a
// valid tenant named name gets an error wrapping ErrInvalid.
func DecodeTenant(name string, value []byte, revision int64) (*adminv1.Tenant, error) {
	t := &adminv1.Tenant{}
	if err := decodeOptions.Unmarshal(value, t); err != nil {
		return nil, fmt.Errorf("%w: tenant %q: %v", ErrInvalid, name, err)
	}
	if t.GetName() != name {
		return nil, fmt.Errorf("%w: tenant stored under %q names tenant %q", ErrInvalid, name, t.GetName())
	}
	t.Revision = 0
	if err := ValidateTenant(t); err != nil {
		return nil, fmt.Errorf("stored tenant %q: %w", name, err)
	}
	t.Revision = revision
	return t, nil
}

// PutTenant stores t if the stored tenant's revision is expectedRevision (0: only if none is
// stored). It returns the tenant as stored with its new revision; ErrConflict when the revision
// does not match; an error wrapping ErrInvalid when t is invalid or one of its API key digests
// belongs to another tenant in the current view. t.Revision is ignored.
func (s *Store) PutTenant(ctx context.Context, t *adminv1.Tenant, expectedRevision int64) (*adminv1.Tenant, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: tenant is missing", ErrInvalid)
	}
	if expectedRevision < 0 {
		return nil, fmt.Errorf("%w: revision %d is negative", ErrInvalid, expectedRevision)
	}
	stored := proto.CloneOf(t)
	stored.Revision = 0
	if err := ValidateTenant(stored); err != nil {
		return nil, err
	}
	view := s.Snapshot()
	for i, d := range stored.GetApiKeySha256() {
		if owner, ok := view.keys[d]; ok && owner != stored.GetName() {
			return nil, fmt.Errorf("%w: api_key_sha256[%d] already belongs to tenant %q", ErrInvalid, i, owner)
		}
	}
	value, err := EncodeTenant(stored)
	if err != nil {
		return nil, err
	}
	key := TenantKey(stored.GetName())
	resp, err := s.client.Txn(ctx).If(revisionIs(key, expectedRevision)).
		Then(clientv3.OpPut(key, string(value))).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		s.metrics.write("put_tenant", "error")
		return nil, fmt.Errorf("configstore: put tenant %q: %w", stored.GetName(), err)
	}
	if !resp.Succeeded {
		s.metrics.write("put_tenant", "conflict")
		return nil, tenantConflict(stored.GetName(), expectedRevision, resp, ErrConflict)
	}
	s.metrics.write("put_tenant", "ok")
	stored.Revision = resp.Header.Revision
	return stored, nil
}

// DeleteTenant removes tenant name if its revision is expectedRevision (0: whatever is stored).
// It returns ErrNotFound when none is stored and ErrConflict when the revision differs.
func (s *Store) DeleteTenant(ctx context.Context, name string, expectedRevision int64) error {
	if err := ValidateName("tenant", name); err != nil {
		return err
	}
	if expectedRevision < 0 {
		return fmt.Errorf("%w: revision %d is negative", ErrInvalid, expectedRevision)
	}
	key := TenantKey(name)
	cmp := clientv3.Compare(clientv3.CreateRevision(key), ">", 0)
	if expectedRevision > 0 {
		cmp = revisionIs(key, expectedRevision)
	}
	resp, err := s.client.Txn(ctx).If(cmp).Then(clientv3.OpDelete(key)).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		s.metrics.write("delete_tenant", "error")
		return fmt.Errorf("configstore: delete tenant %q: %w", name, err)
	}
	if !resp.Succeeded {
		s.metrics.write("delete_tenant", "conflict")
		return tenantConflict(name, expectedRevision, resp, ErrNotFound)
	}
	s.metrics.write("delete_tenant", "ok")
	return nil
}

// GetTenant reads tenant name from etcd (not from the view): ErrNotFound when none is stored, an
// error wrapping ErrUnreadable (and ErrInvalid) when the stored value cannot be read.
func (s *Store) GetTenant(ctx context.Context, name string) (*adminv1.Tenant, error) {
	if err := ValidateName("tenant", name); err != nil {
		return nil, err
	}
	resp, err := s.client.Get(ctx, TenantKey(name))
	if err != nil {
		return nil, fmt.Errorf("configstore: get tenant %q: %w", name, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("%w: no tenant %q", ErrNotFound, name)
	}
	t, err := DecodeTenant(name, resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
	if err != nil {
		return nil, fmt.Errorf("%w at revision %d: %w", ErrUnreadable, resp.Kvs[0].ModRevision, err)
	}
	return t, nil
}

// ListTenants returns every stored tenant, ordered by name. A stored value that is not a valid
// tenant fails the whole list with an error naming it.
func (s *Store) ListTenants(ctx context.Context) ([]*adminv1.Tenant, error) {
	resp, err := s.client.Get(
		ctx,
		TenantPrefix,
		clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend),
	)
	if err != nil {
		return nil, fmt.Errorf("configstore: list tenants: %w", err)
	}
	out := make([]*adminv1.Tenant, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		t, err := DecodeTenant(strings.TrimPrefix(string(kv.Key), TenantPrefix), kv.Value, kv.ModRevision)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// tenantConflict explains a failed compare from the Else branch's Get; missing is the error when
// no tenant is stored at all.
func tenantConflict(name string, expected int64, resp *clientv3.TxnResponse, missing error) error {
	var current int64
	if rr := resp.Responses[0].GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
		current = rr.Kvs[0].ModRevision
	}
	switch {
	case current == 0:
		return fmt.Errorf("%w: no tenant %q (expected revision %d)", missing, name, expected)
	case expected == 0:
		return fmt.Errorf("%w: tenant %q already exists at revision %d", ErrConflict, name, current)
	default:
		return fmt.Errorf("%w: tenant %q is at revision %d, not %d", ErrConflict, name, current, expected)
	}
}

// putTenant applies one stored tenant to next. A value that cannot be read fails closed: the
// tenant's previous limits and keys are dropped (its keys are refused as unknown) and the tenant
// is recorded as unreadable, so its requests are refused until the value is fixed or deleted.
// A key digest that another tenant already holds is not indexed for this one (the first holder
// keeps it) and is logged.
func (s *Store) putTenant(next, prev *View, name string, value []byte, modRev int64) {
	next.dropTenant(name)
	t, err := DecodeTenant(name, value, modRev)
	if err != nil {
		next.unreadableTenants[name] = UnreadableTenant{Name: name, Revision: modRev, Reason: err.Error()}
		if old, ok := prev.unreadableTenants[name]; ok && old.Revision == modRev {
			return
		}
		s.metrics.invalid.Inc()
		s.logger.Warn(
			"stored tenant unreadable, its requests refused until it is fixed",
			"key",
			TenantKey(name),
			"revision",
			modRev,
			"err",
			err,
		)
		return
	}
	next.tenants[name] = t
	for _, d := range t.GetApiKeySha256() {
		if owner, ok := next.keys[d]; ok && owner != name {
			s.logger.Warn("API key digest held by two tenants, kept by the first", "tenant", name, "holder", owner)
			continue
		}
		next.keys[d] = name
	}
}

// UnreadableTenant is a stored tenant value that does not decode or validate (written to etcd
// around the admin API). Its requests are refused until it is replaced or deleted.
type UnreadableTenant struct {
	// Name is the tenant named by the key.
	Name string
	// Revision is the etcd revision at which the value was written.
	Revision int64
	// Reason says why the value cannot be read.
	Reason string
}

// dropTenant removes tenant name, its key digests and its unreadable mark from v.
func (v *View) dropTenant(name string) {
	if t, ok := v.tenants[name]; ok {
		for _, d := range t.GetApiKeySha256() {
			if v.keys[d] == name {
				delete(v.keys, d)
			}
		}
	}
	delete(v.tenants, name)
	delete(v.unreadableTenants, name)
}

// Tenant returns tenant name's stored limits, if a readable value is stored. The value must not
// be modified.
func (v *View) Tenant(name string) (*adminv1.Tenant, bool) {
	t, ok := v.tenants[name]
	return t, ok
}

// UnreadableTenant returns tenant name's stored value that cannot be read, if there is one.
func (v *View) UnreadableTenant(name string) (UnreadableTenant, bool) {
	u, ok := v.unreadableTenants[name]
	return u, ok
}

// TenantByKeyDigest returns the tenant whose API keys include the key with SHA-256 digest d.
// It compares d with every stored digest with crypto/subtle and no early exit, so its timing
// depends only on the number of stored digests, never on which one (if any) matched.
func (v *View) TenantByKeyDigest(d [32]byte) (string, bool) {
	match := -1
	for i := range v.keyList {
		if subtle.ConstantTimeCompare(v.keyList[i].digest[:], d[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return "", false
	}
	return v.keyList[match].tenant, true
}

// keyEntry is one API key digest and its tenant.
type keyEntry struct {
	digest [32]byte
	tenant string
}

// indexKeys builds v.keyList from v.keys, ordered by digest.
func (v *View) indexKeys() {
	v.keyList = v.keyList[:0:0]
	for _, d := range slices.Sorted(maps.Keys(v.keys)) {
		var e keyEntry
		if _, err := hex.Decode(e.digest[:], []byte(d)); err != nil {
			continue // validated when stored
		}
		e.tenant = v.keys[d]
		v.keyList = append(v.keyList, e)
	}
}

// HasAPIKeys reports whether any tenant has an API key: then every request must present one.
func (v *View) HasAPIKeys() bool { return len(v.keys) > 0 }

// Tenants returns the number of readable stored tenants.
func (v *View) Tenants() int { return len(v.tenants) }
