package configstore

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"net/url"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
)

// Limits of a cluster registration.
const (
	maxGatewayURLs = 16
	maxModels      = 1024
	maxPublicKeys  = 8
	maxURLLen      = 2048
)

// ClusterKey returns the key of cluster's registration.
func ClusterKey(cluster string) string { return ClusterPrefix + cluster }

// Registration is a stored cluster registration with its public keys by key id.
type Registration struct {
	// Stored is the registration as stored, with its revision and key ids. Do not modify it.
	Stored *adminv1.ClusterRegistration
	// Keys are the registration's public keys by key id (gossip.KeyID).
	Keys map[string]ed25519.PublicKey
}

// AllowsURL reports whether url is one of the registration's gateway URLs.
func (r Registration) AllowsURL(u string) bool { return slices.Contains(r.Stored.GetGatewayUrls(), u) }

// AllowsModel reports whether the registration lets the cluster serve model, a base model or a
// LoRA adapter name (any, when it lists none).
func (r Registration) AllowsModel(model string) bool {
	ms := r.Stored.GetModels()
	return len(ms) == 0 || slices.Contains(ms, model)
}

// ValidateRegistration checks r and returns an error wrapping ErrInvalid that names the first bad
// field. Gateway URLs must be https:// unless allowCleartext.
func ValidateRegistration(r *adminv1.ClusterRegistration, allowCleartext bool) error {
	if r == nil {
		return fmt.Errorf("%w: registration is missing", ErrInvalid)
	}
	if err := ValidateName("cluster", r.GetCluster()); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := ValidateName("region", r.GetRegion()); err != nil {
		return fmt.Errorf("region: %w", err)
	}
	if r.GetRevision() < 0 {
		return fmt.Errorf("%w: revision %d is negative", ErrInvalid, r.GetRevision())
	}
	if err := validateGatewayURLs(r.GetGatewayUrls(), allowCleartext); err != nil {
		return err
	}
	if len(r.GetModels()) > maxModels {
		return fmt.Errorf("%w: models: %d listed, at most %d", ErrInvalid, len(r.GetModels()), maxModels)
	}
	for i, m := range r.GetModels() {
		if err := ValidateModel(m); err != nil {
			return fmt.Errorf("models[%d]: %w", i, err)
		}
		if slices.Contains(r.GetModels()[:i], m) {
			return fmt.Errorf("%w: models[%d]: %q is listed twice", ErrInvalid, i, m)
		}
	}
	return validatePublicKeys(r.GetPublicKeys())
}

func validateGatewayURLs(urls []string, allowCleartext bool) error {
	if len(urls) == 0 || len(urls) > maxGatewayURLs {
		return fmt.Errorf("%w: gateway_urls: %d listed, want 1 to %d", ErrInvalid, len(urls), maxGatewayURLs)
	}
	for i, s := range urls {
		if err := ValidateGatewayURL(s, allowCleartext); err != nil {
			return fmt.Errorf("gateway_urls[%d]: %w", i, err)
		}
		if slices.Contains(urls[:i], s) {
			return fmt.Errorf("%w: gateway_urls[%d]: %q is listed twice", ErrInvalid, i, s)
		}
	}
	return nil
}

// ValidateGatewayURL checks a registered gateway URL: an exact base URL (scheme://host[:port],
// no path, query, fragment or user), https unless allowCleartext.
func ValidateGatewayURL(s string, allowCleartext bool) error {
	u, err := url.Parse(s)
	switch {
	case len(s) > maxURLLen:
		return fmt.Errorf("%w: URL longer than %d bytes", ErrInvalid, maxURLLen)
	case err != nil:
		return fmt.Errorf("%w: %q is not a URL: %v", ErrInvalid, s, err)
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("%w: %q: want an https:// URL", ErrInvalid, s)
	case u.Scheme == "http" && !allowCleartext:
		return fmt.Errorf(
			"%w: %q is cleartext: want https:// (or run the routers with --allow-cleartext-gateways)",
			ErrInvalid,
			s,
		)
	case u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return fmt.Errorf("%w: %q: want a base URL, scheme://host[:port] with nothing after it", ErrInvalid, s)
	case s != u.Scheme+"://"+u.Host:
		return fmt.Errorf("%w: %q: write it as the gateway advertises it, %q", ErrInvalid, s, u.Scheme+"://"+u.Host)
	}
	return nil
}

func validatePublicKeys(keys [][]byte) error {
	if len(keys) == 0 || len(keys) > maxPublicKeys {
		return fmt.Errorf("%w: public_keys: %d listed, want 1 to %d", ErrInvalid, len(keys), maxPublicKeys)
	}
	for i, k := range keys {
		if len(k) != ed25519.PublicKeySize {
			return fmt.Errorf(
				"%w: public_keys[%d]: %d bytes, want a raw %d-byte Ed25519 public key",
				ErrInvalid,
				i,
				len(k),
				ed25519.PublicKeySize,
			)
		}
		for _, prev := range keys[:i] {
			if string(prev) == string(k) {
				return fmt.Errorf("%w: public_keys[%d]: listed twice", ErrInvalid, i)
			}
		}
	}
	return nil
}

// withKeyIDs returns r with its key ids filled in (r is not modified).
func withKeyIDs(r *adminv1.ClusterRegistration) *adminv1.ClusterRegistration {
	c := proto.CloneOf(r)
	c.KeyIds = keyIDs(c.GetPublicKeys())
	return c
}

// EncodeRegistration returns the stored form of r: protobuf JSON with the proto field names,
// without the revision and key ids. r must be valid.
func EncodeRegistration(r *adminv1.ClusterRegistration) ([]byte, error) {
	c := proto.CloneOf(r)
	c.Revision, c.KeyIds = 0, nil
	b, err := encodeOptions.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("configstore: encode registration %q: %w", r.GetCluster(), err)
	}
	return b, nil
}

// DecodeRegistration parses the stored value of cluster's registration written at revision and
// fills in its key ids. A value that is not a valid registration of cluster gets an error
// wrapping ErrInvalid. Cleartext gateway URLs pass here (routers that allow them may have stored
// them); the routers that do not allow them refuse them when they check a summary.
func DecodeRegistration(cluster string, value []byte, revision int64) (*adminv1.ClusterRegistration, error) {
	r := &adminv1.ClusterRegistration{}
	if err := decodeOptions.Unmarshal(value, r); err != nil {
		return nil, fmt.Errorf("%w: registration %q: %v", ErrInvalid, cluster, err)
	}
	if r.GetCluster() != cluster {
		return nil, fmt.Errorf("%w: registration stored under %q names cluster %q", ErrInvalid, cluster, r.GetCluster())
	}
	r.Revision, r.KeyIds = 0, nil
	if err := ValidateRegistration(r, true); err != nil {
		return nil, fmt.Errorf("stored registration %q: %w", cluster, err)
	}
	r = withKeyIDs(r)
	r.Revision = revision
	return r, nil
}

// newRegistration indexes a decoded registration's keys.
func newRegistration(r *adminv1.ClusterRegistration) Registration {
	return Registration{Stored: r, Keys: keysByID(r.GetPublicKeys(), r.GetKeyIds())}
}

// PutRegistration stores r if the stored registration's revision is expectedRevision (0: only if
// none is stored). It returns the registration as stored, with its new revision and key ids;
// ErrConflict when the revision does not match; an error wrapping ErrInvalid when r is invalid
// (cleartext gateway URLs only with allowCleartext). r.Revision and r.KeyIds are ignored.
func (s *Store) PutRegistration(
	ctx context.Context,
	r *adminv1.ClusterRegistration,
	expectedRevision int64,
	allowCleartext bool,
) (*adminv1.ClusterRegistration, error) {
	if r == nil {
		return nil, fmt.Errorf("%w: registration is missing", ErrInvalid)
	}
	if expectedRevision < 0 {
		return nil, fmt.Errorf("%w: revision %d is negative", ErrInvalid, expectedRevision)
	}
	stored := proto.CloneOf(r)
	stored.Revision, stored.KeyIds = 0, nil
	if err := ValidateRegistration(stored, allowCleartext); err != nil {
		return nil, err
	}
	value, err := EncodeRegistration(stored)
	if err != nil {
		return nil, err
	}
	revision, err := s.putRegistrationValue(ctx, "cluster", stored.GetCluster(), ClusterKey(stored.GetCluster()),
		value, expectedRevision)
	if err != nil {
		return nil, err
	}
	stored = withKeyIDs(stored)
	stored.Revision = revision
	return stored, nil
}

// DeleteRegistration removes cluster's registration if its revision is expectedRevision (0:
// whatever is stored). It returns ErrNotFound when none is stored and ErrConflict when the
// revision differs.
func (s *Store) DeleteRegistration(ctx context.Context, cluster string, expectedRevision int64) error {
	return s.deleteRegistrationKey(ctx, "cluster", cluster, ClusterKey(cluster), expectedRevision)
}

// ListRegistrations returns every stored registration, ordered by cluster. A stored value that
// is not a valid registration fails the whole list with an error naming its cluster.
func (s *Store) ListRegistrations(ctx context.Context) ([]*adminv1.ClusterRegistration, error) {
	return listRegistrations(ctx, s, ClusterPrefix, "registrations", DecodeRegistration)
}

// registrationConflict explains a failed compare from the Else branch's Get of the registration of
// kind ("cluster" or "region") name; missing is the error when no registration is stored at all.
func registrationConflict(kind, name string, expected int64, resp *clientv3.TxnResponse, missing error) error {
	var current int64
	if rr := resp.Responses[0].GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
		current = rr.Kvs[0].ModRevision
	}
	switch {
	case current == 0:
		return fmt.Errorf("%w: no registration for %s %q (expected revision %d)", missing, kind, name, expected)
	case expected == 0:
		return fmt.Errorf("%w: %s %q is already registered at revision %d", ErrConflict, kind, name, current)
	default:
		return fmt.Errorf("%w: registration of %s %q is at revision %d, not %d", ErrConflict, kind, name, current,
			expected)
	}
}
