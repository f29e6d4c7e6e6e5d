// Package identity decides which capacity summaries the global router trusts. A cluster is
// registered in etcd (configstore: region, exact gateway URLs, allowed models, Ed25519 public
// keys); its gateways sign every summary with the cluster's private key. Verifier checks each
// summary gossip receives against the registration before gossip stores it, so a node that holds
// the gossip key but not a cluster's signing key can neither advertise that cluster, nor send its
// prompts elsewhere, nor freeze its updates.
//
// Modes: while no cluster is registered at all, the router is in compatibility mode and accepts
// every summary unchecked (a warning is logged once and the acceptances are counted), so a pool
// without identities keeps working; with Config.Require (--require-cluster-identity) it accepts
// nothing then. Once any cluster is registered, strict mode applies to every cluster: only signed
// summaries of registered clusters that match their registration are accepted. A stored
// registration that does not decode or validate fails closed: it counts as registered (strict
// mode), and its cluster's summaries are rejected until the value is fixed or deleted. Watch makes the
// gossip node re-check what it holds whenever the registrations change. The verifier also tells
// gossip which summaries it authenticated, so that an unauthenticated departure claim (a forged
// leave or dead message) cannot make a registered cluster's summary stale: it ages out instead.
package identity

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/gossip"
)

// Why a summary is rejected: the reason label of switchyard_router_summaries_rejected_total.
const (
	// ReasonUnregistered: the summary's cluster is not registered (or, in required mode,
	// nothing is).
	ReasonUnregistered = "unregistered"
	// ReasonUnsigned: the summary carries no signature.
	ReasonUnsigned = "unsigned"
	// ReasonUnknownKey: the summary's signing key id is not one of the cluster's registered keys.
	ReasonUnknownKey = "unknown_key"
	// ReasonBadSignature: the registered key does not verify the signature.
	ReasonBadSignature = "bad_signature"
	// ReasonRegionMismatch: the summary names another region than the registration.
	ReasonRegionMismatch = "region_mismatch"
	// ReasonURLMismatch: the summary's gateway URL is not one of the registered ones.
	ReasonURLMismatch = "gateway_url_mismatch"
	// ReasonCleartextURL: the gateway URL is http:// and cleartext gateways are not allowed.
	ReasonCleartextURL = "cleartext_gateway_url"
	// ReasonModelNotAllowed: the summary lists a model the registration does not allow.
	ReasonModelNotAllowed = "model_not_allowed"
	// ReasonAdapterNotAllowed: the summary lists a LoRA adapter the registration does not list.
	ReasonAdapterNotAllowed = "adapter_not_allowed"
	// ReasonInvalidRegistration: the cluster's stored registration value does not decode or
	// validate; the cluster is rejected until it is fixed (never trusted with an older one).
	ReasonInvalidRegistration = "invalid_registration"
)

// Reasons lists every rejection reason.
var Reasons = []string{ReasonUnregistered, ReasonUnsigned, ReasonUnknownKey, ReasonBadSignature,
	ReasonRegionMismatch, ReasonURLMismatch, ReasonCleartextURL, ReasonModelNotAllowed, ReasonAdapterNotAllowed,
	ReasonInvalidRegistration}

// Identity modes (ListRegistrations' identity_mode).
const (
	// ModeCompatibility: no cluster is registered; every summary is accepted unchecked.
	ModeCompatibility = "compatibility"
	// ModeStrict: some cluster is registered; only verified summaries are accepted.
	ModeStrict = "strict"
	// ModeRequired: strict, and nothing is accepted while no cluster is registered.
	ModeRequired = "required"
)

// ErrRejected is wrapped by every error VerifySummary returns.
var ErrRejected = errors.New("identity: summary rejected")

// RejectedError is why a summary was rejected.
type RejectedError struct {
	// Reason is one of Reasons.
	Reason string
	// Detail explains it.
	Detail string
}

func (e *RejectedError) Error() string { return fmt.Sprintf("identity: %s: %s", e.Reason, e.Detail) }

// Unwrap makes the error match ErrRejected.
func (e *RejectedError) Unwrap() error { return ErrRejected }

// Config configures a Verifier.
type Config struct {
	// Require refuses every summary while no cluster is registered, instead of accepting them
	// unchecked (--require-cluster-identity). Default false.
	Require bool
	// AllowCleartext accepts http:// gateway URLs in registrations and summaries
	// (--allow-cleartext-gateways); otherwise only https:// ones. Default false.
	AllowCleartext bool
	// LogEvery is the least time between two logged rejections of one node for one reason.
	// Default 1 min.
	LogEvery time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config { return Config{LogEvery: time.Minute} }

// Validate reports an invalid field.
func (c Config) Validate() error {
	if c.LogEvery <= 0 {
		return fmt.Errorf("identity: LogEvery %v must be positive", c.LogEvery)
	}
	return nil
}

// ConfigSource returns the config view in force. *configstore.Store implements it. It must be
// safe for concurrent use and never return nil.
type ConfigSource interface {
	Snapshot() *configstore.View
}

// Verifier checks capacity summaries against the cluster registrations. It implements
// gossip.SummaryVerifier and is safe for concurrent use.
type Verifier struct {
	cfg     Config
	src     ConfigSource
	log     *slog.Logger
	metrics *metrics
	warned  atomic.Bool // the compatibility-mode warning was logged

	mu     sync.Mutex
	logged map[string]time.Time // node + reason → last logged rejection
}

var (
	_ gossip.SummaryVerifier      = (*Verifier)(nil)
	_ gossip.SummaryAuthenticator = (*Verifier)(nil)
)

// New returns a verifier over the registrations of src. Its collectors are registered on reg
// (none when reg is nil); logger may be nil.
func New(cfg Config, src ConfigSource, logger *slog.Logger, reg prometheus.Registerer) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("identity: nil config source")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Verifier{cfg: cfg, src: src, log: logger, metrics: m, logged: map[string]time.Time{}}, nil
}

// Mode returns the identity mode in force: ModeCompatibility, ModeStrict or ModeRequired.
func (v *Verifier) Mode() string { return v.mode(v.src.Snapshot()) }

func (v *Verifier) mode(view *configstore.View) string {
	switch {
	case view.RegistrationCount() > 0 || len(view.InvalidRegistrations()) > 0:
		return ModeStrict
	case v.cfg.Require:
		return ModeRequired
	}
	return ModeCompatibility
}

// VerifySummary accepts s, or returns a *RejectedError (wrapping ErrRejected) saying why not;
// a rejection is counted and logged (at most once per LogEvery for a node and reason).
func (v *Verifier) VerifySummary(s *gossipv1.CapacitySummary) error {
	view := v.src.Snapshot()
	switch v.mode(view) {
	case ModeCompatibility:
		v.metrics.accepted.WithLabelValues("unverified").Inc()
		if !v.warned.Swap(true) {
			v.log.Warn(
				"accepting capacity summaries unverified: no cluster is registered (compatibility mode); register clusters or run with --require-cluster-identity",
				"node",
				s.GetNode(),
				"cluster",
				s.GetCluster(),
			)
		}
		return nil
	case ModeRequired:
		return v.reject(s, ReasonUnregistered, "no cluster is registered and cluster identity is required")
	}
	if bad, ok := view.InvalidRegistration(s.GetCluster()); ok {
		return v.reject(
			s,
			ReasonInvalidRegistration,
			fmt.Sprintf("the stored registration of cluster %q (revision %d) is invalid: %s",
				s.GetCluster(), bad.Revision, bad.Reason),
		)
	}
	reg, ok := view.Registration(s.GetCluster())
	if !ok {
		return v.reject(s, ReasonUnregistered, fmt.Sprintf("cluster %q is not registered", s.GetCluster()))
	}
	if reason, detail := v.check(s, reg); reason != "" {
		return v.reject(s, reason, detail)
	}
	v.metrics.accepted.WithLabelValues("verified").Inc()
	return nil
}

// Authenticated reports whether s, a summary VerifySummary accepted, was verified against its
// cluster's registered key: in strict mode, a signed summary of a registered cluster. Gossip then
// ignores departure claims about its publisher (anyone with the gossip key can send them), and the
// summary ages out when the publisher stops publishing.
func (v *Verifier) Authenticated(s *gossipv1.CapacitySummary) bool {
	view := v.src.Snapshot()
	if v.mode(view) == ModeCompatibility || len(s.GetSignature()) == 0 {
		return false
	}
	_, ok := view.Registration(s.GetCluster())
	return ok
}

// check returns why s does not match reg ("" when it does).
func (v *Verifier) check(s *gossipv1.CapacitySummary, reg configstore.Registration) (reason, detail string) {
	if len(s.GetSignature()) == 0 {
		return ReasonUnsigned, "the summary is not signed"
	}
	pub, ok := reg.Keys[s.GetSigningKeyId()]
	if !ok {
		return ReasonUnknownKey, fmt.Sprintf(
			"signing key %q is not registered for cluster %q",
			s.GetSigningKeyId(),
			s.GetCluster(),
		)
	}
	if err := gossip.VerifySummary(s, pub); err != nil {
		return ReasonBadSignature, fmt.Sprintf("key %q: %v", s.GetSigningKeyId(), err)
	}
	if s.GetRegion() != reg.Stored.GetRegion() {
		return ReasonRegionMismatch, fmt.Sprintf("region %q, registered %q", s.GetRegion(), reg.Stored.GetRegion())
	}
	if !reg.AllowsURL(s.GetGatewayUrl()) {
		return ReasonURLMismatch, fmt.Sprintf("gateway URL %q is not registered", s.GetGatewayUrl())
	}
	if u, err := url.Parse(s.GetGatewayUrl()); err != nil || (u.Scheme != "https" && !v.cfg.AllowCleartext) {
		return ReasonCleartextURL, fmt.Sprintf(
			"gateway URL %q is not https:// (see --allow-cleartext-gateways)",
			s.GetGatewayUrl(),
		)
	}
	for _, m := range s.GetModels() {
		if !reg.AllowsModel(m.GetName()) {
			return ReasonModelNotAllowed, fmt.Sprintf("model %q is not registered for cluster %q", m.GetName(), s.GetCluster())
		}
		// An adapter is a model name the cluster attracts requests for: when the registration
		// lists models, it must list each adapter too (its base model is checked above), so that
		// a cluster registered for one model cannot claim another's name as an adapter.
		for _, a := range m.GetAdapters() {
			if !reg.AllowsModel(a.GetName()) {
				return ReasonAdapterNotAllowed, fmt.Sprintf("adapter %q of model %q is not registered for cluster %q",
					a.GetName(), m.GetName(), s.GetCluster())
			}
		}
	}
	return "", ""
}

// maxLogged bounds the rate-limiting memory; past it, it starts over (at worst one more log line
// per node and reason).
const maxLogged = 4096

// reject counts and (rate-limited) logs a rejection and returns its error.
func (v *Verifier) reject(s *gossipv1.CapacitySummary, reason, detail string) error {
	v.metrics.rejected.WithLabelValues(reason).Inc()
	now := v.cfg.Now()
	key := s.GetNode() + "\x00" + reason
	v.mu.Lock()
	last, seen := v.logged[key]
	due := !seen || now.Sub(last) >= v.cfg.LogEvery
	if due {
		if len(v.logged) >= maxLogged {
			v.logged = map[string]time.Time{}
		}
		v.logged[key] = now
	}
	v.mu.Unlock()
	if due {
		v.log.Warn("capacity summary rejected", "reason", reason, "node", s.GetNode(), "cluster", s.GetCluster(),
			"region", s.GetRegion(), "gateway_url", s.GetGatewayUrl(), "key_id", s.GetSigningKeyId(), "detail", detail)
	}
	return &RejectedError{Reason: reason, Detail: detail}
}
