package configstore

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
)

// RegionPrefix + region holds a region's registration (protobuf JSON of
// switchyard.admin.v1.RegionRegistration): the public keys its region digests must verify with.
const RegionPrefix = Prefix + "regions/"

// RegionKey returns the key of region's registration.
func RegionKey(region string) string { return RegionPrefix + region }

// RegionRegistration is a stored region registration with its public keys by key id. Invalid is
// set (and Keys empty) when the stored value cannot be read: the region's digests are rejected
// until it is fixed or deleted.
type RegionRegistration struct {
	// Stored is the registration as stored, with its revision and key ids. Do not modify it.
	Stored *adminv1.RegionRegistration
	// Keys are the registration's public keys by key id (gossip.KeyID).
	Keys map[string]ed25519.PublicKey
	// Invalid says why the stored value cannot be read; "" when it can.
	Invalid string
}

// ValidateRegionRegistration checks r and returns an error wrapping ErrInvalid naming the first
// bad field.
func ValidateRegionRegistration(r *adminv1.RegionRegistration) error {
	if r == nil {
		return fmt.Errorf("%w: registration is missing", ErrInvalid)
	}
	if err := ValidateName("region", r.GetRegion()); err != nil {
		return fmt.Errorf("region: %w", err)
	}
	if r.GetRevision() < 0 {
		return fmt.Errorf("%w: revision %d is negative", ErrInvalid, r.GetRevision())
	}
	return validatePublicKeys(r.GetPublicKeys())
}

// withRegionKeyIDs returns r with its key ids filled in (r is not modified).
func withRegionKeyIDs(r *adminv1.RegionRegistration) *adminv1.RegionRegistration {
	c := proto.CloneOf(r)
	c.KeyIds = keyIDs(c.GetPublicKeys())
	return c
}

// DecodeRegionRegistration parses the stored value of region's registration written at revision
// and fills in its key ids; a value that is not a valid registration of region gets an error
// wrapping ErrInvalid.
func DecodeRegionRegistration(region string, value []byte, revision int64) (*adminv1.RegionRegistration, error) {
	r := &adminv1.RegionRegistration{}
	if err := decodeOptions.Unmarshal(value, r); err != nil {
		return nil, fmt.Errorf("%w: region registration %q: %v", ErrInvalid, region, err)
	}
	if r.GetRegion() != region {
		return nil, fmt.Errorf("%w: region registration stored under %q names region %q", ErrInvalid, region,
			r.GetRegion())
	}
	r.Revision, r.KeyIds = 0, nil
	if err := ValidateRegionRegistration(r); err != nil {
		return nil, fmt.Errorf("stored region registration %q: %w", region, err)
	}
	r = withRegionKeyIDs(r)
	r.Revision = revision
	return r, nil
}

// PutRegionRegistration stores r if the stored registration's revision is expectedRevision (0:
// only if none is stored) and returns it as stored, with its new revision and key ids;
// ErrConflict when the revision does not match, ErrInvalid when r is invalid.
func (s *Store) PutRegionRegistration(
	ctx context.Context,
	r *adminv1.RegionRegistration,
	expectedRevision int64,
) (*adminv1.RegionRegistration, error) {
	if expectedRevision < 0 {
		return nil, fmt.Errorf("%w: revision %d is negative", ErrInvalid, expectedRevision)
	}
	if r == nil {
		return nil, fmt.Errorf("%w: registration is missing", ErrInvalid)
	}
	stored := proto.CloneOf(r)
	stored.Revision, stored.KeyIds = 0, nil
	if err := ValidateRegionRegistration(stored); err != nil {
		return nil, err
	}
	value, err := encodeOptions.Marshal(stored)
	if err != nil {
		return nil, fmt.Errorf("configstore: encode region registration %q: %w", stored.GetRegion(), err)
	}
	revision, err := s.putRegistrationValue(ctx, "region", stored.GetRegion(), RegionKey(stored.GetRegion()), value,
		expectedRevision)
	if err != nil {
		return nil, err
	}
	stored = withRegionKeyIDs(stored)
	stored.Revision = revision
	return stored, nil
}

// DeleteRegionRegistration removes region's registration if its revision is expectedRevision
// (0: whatever is stored); ErrNotFound when none is stored, ErrConflict when the revision
// differs.
func (s *Store) DeleteRegionRegistration(ctx context.Context, region string, expectedRevision int64) error {
	return s.deleteRegistrationKey(ctx, "region", region, RegionKey(region), expectedRevision)
}

// ListRegionRegistrations returns every stored region registration, ordered by region. A stored
// value that cannot be read fails the list with an error naming its region.
func (s *Store) ListRegionRegistrations(ctx context.Context) ([]*adminv1.RegionRegistration, error) {
	return listRegistrations(ctx, s, RegionPrefix, "region registrations", DecodeRegionRegistration)
}

// putRegionRegistration applies one stored region registration to next; an invalid value fails
// closed (the region's digests are rejected), logged once per written value.
func (s *Store) putRegionRegistration(next, prev *View, region string, value []byte, modRev int64) {
	next.registrationsRevision = max(next.registrationsRevision, modRev)
	r, err := DecodeRegionRegistration(region, value, modRev)
	if err != nil {
		next.regionRegistrations[region] = RegionRegistration{
			Stored:  &adminv1.RegionRegistration{Region: region, Revision: modRev},
			Invalid: err.Error(),
		}
		if old, ok := prev.regionRegistrations[region]; ok && old.Invalid != "" && old.Stored.GetRevision() == modRev {
			return
		}
		s.metrics.invalid.Inc()
		s.logger.Warn("stored region registration invalid, region's digests rejected until it is fixed",
			"key", RegionKey(region), "revision", modRev, "err", err)
		return
	}
	next.regionRegistrations[region] = RegionRegistration{Stored: r, Keys: keysByID(r.GetPublicKeys(), r.GetKeyIds())}
}

// RegionRegistration returns region's registration (perhaps Invalid), if one is stored.
func (v *View) RegionRegistration(region string) (RegionRegistration, bool) {
	r, ok := v.regionRegistrations[region]
	return r, ok
}

// RegionRegistrationCount returns the number of stored region registrations, invalid ones
// included.
func (v *View) RegionRegistrationCount() int { return len(v.regionRegistrations) }

// RegionRegistrations returns every readable region registration, ordered by region. The values
// must not be modified.
func (v *View) RegionRegistrations() []*adminv1.RegionRegistration {
	out := make([]*adminv1.RegionRegistration, 0, len(v.regionRegistrations))
	for _, name := range slices.Sorted(maps.Keys(v.regionRegistrations)) {
		if r := v.regionRegistrations[name]; r.Invalid == "" {
			out = append(out, r.Stored)
		}
	}
	return out
}
