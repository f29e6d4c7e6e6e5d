package identity

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the verifier's collectors.
type metrics struct {
	rejected *prometheus.CounterVec
	accepted *prometheus.CounterVec

	digestRejected        *prometheus.CounterVec
	digestClusterRejected *prometheus.CounterVec
	digestAccepted        *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_summaries_rejected_total",
			Help: "Capacity summaries ignored because they do not match their cluster's registration, by reason " +
				"(unregistered, unsigned, unknown_key, bad_signature, region_mismatch, gateway_url_mismatch, " +
				"cleartext_gateway_url, model_not_allowed, adapter_not_allowed, invalid_registration).",
		}, []string{"reason"}),
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_summaries_accepted_total",
			Help: "Capacity summaries accepted: verified against their registration, or unverified (compatibility mode: no " +
				"cluster registered).",
		}, []string{"check"}),
		digestRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_digests_rejected_total",
			Help: "Region digest messages ignored because their region's registered key does not verify them, by reason " +
				"(unregistered_region, invalid_registration, unsigned, unknown_key, bad_signature).",
		}, []string{"reason"}),
		digestClusterRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_digest_clusters_rejected_total",
			Help: "Clusters of accepted region digests left out because they do not match their registration, by reason " +
				"(unregistered, invalid_registration, region_mismatch, gateway_url_mismatch, cleartext_gateway_url, " +
				"model_not_allowed, adapter_not_allowed); counted once per digest message.",
		}, []string{"reason"}),
		digestAccepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_digests_accepted_total",
			Help: "Region digest messages accepted: verified with their region's key, or unverified (compatibility mode).",
		}, []string{"check"}),
	}
	for _, r := range DigestReasons {
		m.digestRejected.WithLabelValues(r)
	}
	for _, r := range DigestClusterReasons {
		m.digestClusterRejected.WithLabelValues(r)
	}
	m.digestAccepted.WithLabelValues("verified")
	m.digestAccepted.WithLabelValues("unverified")
	for _, r := range Reasons {
		m.rejected.WithLabelValues(r)
	}
	m.accepted.WithLabelValues("verified")
	m.accepted.WithLabelValues("unverified")
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.rejected, m.accepted, m.digestRejected, m.digestClusterRejected,
		m.digestAccepted} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("identity: register metrics: %w", err)
		}
	}
	return m, nil
}
