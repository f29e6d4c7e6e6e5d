// Package configstore keeps the global router's shared configuration in etcd: per-model routing
// policies, drains of clusters and regions, cluster registrations (the identity a cluster's
// capacity summaries must match), region registrations (the keys a region's digests must verify
// with) and tenants (limits and API key digests), under the key prefix
// /switchyard/v1/. Writes use
// optimistic concurrency (a stale revision gets ErrConflict, never a silent overwrite). Store.Run
// loads the prefix and then watches it, publishing every change as a new immutable View that the
// data path reads without locks; while etcd is unreachable the last good View stays in force.
// Policies fail closed: before the first load, and for a model whose stored value cannot be read,
// View.Policy returns an error instead of the defaults (which allow every region). Elector runs leader elections (the
// DNS sync's) under the same prefix.
package configstore

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Key layout. Every key lives under Prefix.
const (
	// Prefix is the root of every key the router stores.
	Prefix = "/switchyard/v1/"
	// PolicyPrefix + model holds a model's policy (protobuf JSON of switchyard.admin.v1.Policy).
	PolicyPrefix = Prefix + "policies/"
	// ClusterDrainPrefix + cluster exists while the cluster is drained.
	ClusterDrainPrefix = Prefix + "drain/cluster/"
	// RegionDrainPrefix + region exists while the region is drained.
	RegionDrainPrefix = Prefix + "drain/region/"
	// ElectionPrefix + election name holds the candidates' keys of a leader election.
	ElectionPrefix = Prefix + "election/"
	// ClusterPrefix + cluster holds a cluster's registration (protobuf JSON of
	// switchyard.admin.v1.ClusterRegistration): the identity its capacity summaries must match.
	ClusterPrefix = Prefix + "clusters/"
)

// Errors. The admin API maps them to gRPC codes: ErrNotFound to NotFound, ErrConflict to
// FailedPrecondition, ErrInvalid to InvalidArgument, ErrUnreadable to DataLoss.
var (
	// ErrNotFound means no policy is stored for the model (or no registration for the cluster).
	ErrNotFound = errors.New("configstore: not found")
	// ErrConflict means the stored revision is not the expected one: someone else wrote first.
	ErrConflict = errors.New("configstore: revision conflict")
	// ErrInvalid means an argument or a stored value is invalid; the message names the field.
	ErrInvalid = errors.New("configstore: invalid argument")
	// ErrUnreadable means a stored policy value cannot be read (it does not decode or is not a
	// valid policy: written to etcd around the admin API); its model is refused until a valid
	// policy replaces it or it is deleted.
	ErrUnreadable = errors.New("configstore: stored policy cannot be read")
)

// Limits on names.
const (
	maxModelLen = 256
	maxNameLen  = 253
)

// PolicyKey returns the key of model's policy.
func PolicyKey(model string) string { return PolicyPrefix + model }

// ClusterDrainKey returns the key that marks cluster as drained.
func ClusterDrainKey(cluster string) string { return ClusterDrainPrefix + cluster }

// RegionDrainKey returns the key that marks region as drained.
func RegionDrainKey(region string) string { return RegionDrainPrefix + region }

// ValidateModel checks a model name: 1 to 256 bytes of UTF-8 with no spaces or control characters
// (slashes are allowed, as in "meta-llama/Llama-3.1-8B-Instruct").
func ValidateModel(model string) error {
	if model == "" || len(model) > maxModelLen || !utf8.ValidString(model) {
		return fmt.Errorf("%w: model %q must be 1 to %d bytes of UTF-8", ErrInvalid, model, maxModelLen)
	}
	if strings.IndexFunc(model, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("%w: model %q contains a space or control character", ErrInvalid, model)
	}
	return nil
}

// ValidateName checks a cluster or region name: 1 to 253 characters of [A-Za-z0-9._-].
func ValidateName(kind, name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("%w: %s name must be 1 to %d characters", ErrInvalid, kind, maxNameLen)
	}
	for _, r := range name {
		ok := r == '.' || r == '_' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
		if !ok {
			return fmt.Errorf("%w: %s name %q may only hold letters, digits, '.', '_' and '-'", ErrInvalid, kind, name)
		}
	}
	return nil
}
