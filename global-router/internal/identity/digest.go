package identity

import (
	"fmt"
	"net/url"
	"time"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/gossip"
)

// Region digests. An aggregator signs the digest of its region's clusters with the region's key
// (the gateways' signatures do not survive aggregation); a router accepts a digest only when a
// key registered for the digest's region verifies it (VerifyDigest), and of an accepted digest
// only the clusters registered for that region, with the digest's gateway URLs and models
// matching the registration (AcceptDigestCluster). While no cluster and no region is registered
// (compatibility mode, and not --require-cluster-identity), digests are accepted unverified, as
// summaries are.

// Why a digest is rejected: the reason label of switchyard_router_digests_rejected_total.
const (
	// DigestUnregisteredRegion: the digest's region has no registration (or nothing is registered
	// in required mode).
	DigestUnregisteredRegion = "unregistered_region"
	// DigestInvalidRegistration: the region's stored registration cannot be read.
	DigestInvalidRegistration = "invalid_registration"
	// DigestUnsigned: the digest carries no signature.
	DigestUnsigned = "unsigned"
	// DigestUnknownKey: the digest's key id is not one of the region's registered keys.
	DigestUnknownKey = "unknown_key"
	// DigestBadSignature: the registered key does not verify the signature.
	DigestBadSignature = "bad_signature"
)

// DigestReasons lists every digest rejection reason.
var DigestReasons = []string{DigestUnregisteredRegion, DigestInvalidRegistration, DigestUnsigned, DigestUnknownKey,
	DigestBadSignature}

// DigestClusterReasons lists why a cluster of an accepted digest is left out: the reason label of
// switchyard_router_digest_clusters_rejected_total (the summary reasons that apply to a cluster
// without its own signature).
var DigestClusterReasons = []string{ReasonUnregistered, ReasonInvalidRegistration, ReasonRegionMismatch,
	ReasonURLMismatch, ReasonCleartextURL, ReasonModelNotAllowed, ReasonAdapterNotAllowed}

var _ gossip.DigestVerifier = (*Verifier)(nil)

// digestStrict reports whether digests are verified: anything (a cluster or a region) is
// registered, or identity is required.
func (v *Verifier) digestStrict(view *configstore.View) bool {
	return v.mode(view) != ModeCompatibility || view.RegionRegistrationCount() > 0
}

// VerifyDigest accepts d, or returns a *RejectedError (wrapping ErrRejected) saying why not; a
// rejection is counted and logged (at most once per LogEvery for an aggregator and reason). It
// implements gossip.DigestVerifier.
func (v *Verifier) VerifyDigest(d *gossipv1.RegionDigest) error {
	view := v.src.Snapshot()
	if !v.digestStrict(view) {
		v.metrics.digestAccepted.WithLabelValues("unverified").Inc()
		return nil
	}
	reg, ok := view.RegionRegistration(d.GetRegion())
	switch {
	case !ok:
		return v.rejectDigest(d, DigestUnregisteredRegion, fmt.Sprintf("region %q is not registered", d.GetRegion()))
	case reg.Invalid != "":
		return v.rejectDigest(d, DigestInvalidRegistration, fmt.Sprintf("the stored registration of region %q is "+
			"invalid: %s", d.GetRegion(), reg.Invalid))
	case len(d.GetSignature()) == 0:
		return v.rejectDigest(d, DigestUnsigned, "the digest is not signed")
	}
	pub, ok := reg.Keys[d.GetSigningKeyId()]
	if !ok {
		return v.rejectDigest(d, DigestUnknownKey, fmt.Sprintf("signing key %q is not registered for region %q",
			d.GetSigningKeyId(), d.GetRegion()))
	}
	if err := gossip.VerifyDigest(d, pub); err != nil {
		return v.rejectDigest(d, DigestBadSignature, fmt.Sprintf("key %q: %v", d.GetSigningKeyId(), err))
	}
	v.metrics.digestAccepted.WithLabelValues("verified").Inc()
	return nil
}

// AcceptDigestCluster reports whether c, a cluster listed by an accepted digest of region, may
// be routed to: in strict mode the cluster is registered for region and its gateway URLs and
// models match the registration. A refusal is counted and logged (rate-limited) and returned as
// a *RejectedError.
func (v *Verifier) AcceptDigestCluster(region string, c *gossipv1.DigestCluster) error {
	view := v.src.Snapshot()
	if !v.digestStrict(view) {
		return nil
	}
	name := c.GetCluster()
	if bad, ok := view.InvalidRegistration(name); ok {
		return v.rejectDigestCluster(region, c, ReasonInvalidRegistration,
			fmt.Sprintf("the stored registration of cluster %q is invalid: %s", name, bad.Reason))
	}
	reg, ok := view.Registration(name)
	if !ok {
		return v.rejectDigestCluster(region, c, ReasonUnregistered, fmt.Sprintf("cluster %q is not registered", name))
	}
	if reason, detail := v.checkDigestCluster(region, c, reg); reason != "" {
		return v.rejectDigestCluster(region, c, reason, detail)
	}
	return nil
}

// checkDigestCluster returns why c does not match reg ("" when it does).
func (v *Verifier) checkDigestCluster(
	region string,
	c *gossipv1.DigestCluster,
	reg configstore.Registration,
) (reason, detail string) {
	if region != reg.Stored.GetRegion() {
		return ReasonRegionMismatch, fmt.Sprintf("digest of region %q, cluster registered in %q", region,
			reg.Stored.GetRegion())
	}
	for _, u := range c.GetGatewayUrls() {
		if !reg.AllowsURL(u) {
			return ReasonURLMismatch, fmt.Sprintf("gateway URL %q is not registered", u)
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "https" && !v.cfg.AllowCleartext) {
			return ReasonCleartextURL, fmt.Sprintf("gateway URL %q is not https:// (see --allow-cleartext-gateways)", u)
		}
	}
	for _, m := range c.GetModels() {
		if !reg.AllowsModel(m.GetName()) {
			return ReasonModelNotAllowed, fmt.Sprintf("model %q is not registered for cluster %q", m.GetName(),
				c.GetCluster())
		}
		for _, a := range m.GetAdapters() {
			if !reg.AllowsModel(a.GetName()) {
				return ReasonAdapterNotAllowed, fmt.Sprintf("adapter %q of model %q is not registered for cluster %q",
					a.GetName(), m.GetName(), c.GetCluster())
			}
		}
	}
	return "", ""
}

// rejectDigest counts and (rate-limited) logs a digest's rejection and returns its error.
func (v *Verifier) rejectDigest(d *gossipv1.RegionDigest, reason, detail string) error {
	v.metrics.digestRejected.WithLabelValues(reason).Inc()
	if v.logDue("digest\x00" + d.GetOrigin() + "\x00" + reason) {
		v.log.Warn("region digest rejected", "reason", reason, "origin", d.GetOrigin(), "region", d.GetRegion(),
			"key_id", d.GetSigningKeyId(), "detail", detail)
	}
	return &RejectedError{Reason: reason, Detail: detail}
}

// rejectDigestCluster counts and (rate-limited) logs a digest cluster's refusal.
func (v *Verifier) rejectDigestCluster(region string, c *gossipv1.DigestCluster, reason, detail string) error {
	v.metrics.digestClusterRejected.WithLabelValues(reason).Inc()
	if v.logDue("digest-cluster\x00" + c.GetCluster() + "\x00" + reason) {
		v.log.Warn("cluster of a region digest rejected", "reason", reason, "cluster", c.GetCluster(),
			"region", region, "gateway_urls", c.GetGatewayUrls(), "detail", detail)
	}
	return &RejectedError{Reason: reason, Detail: detail}
}

// logDue reports whether a rejection under key may be logged now (once per LogEvery).
func (v *Verifier) logDue(key string) bool {
	now := v.cfg.Now()
	v.mu.Lock()
	defer v.mu.Unlock()
	last, seen := v.logged[key]
	if seen && now.Sub(last) < v.cfg.LogEvery {
		return false
	}
	if len(v.logged) >= maxLogged {
		v.logged = map[string]time.Time{}
	}
	v.logged[key] = now
	return true
}
