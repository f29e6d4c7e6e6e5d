package replica

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Rejection reasons of switchyard_gateway_replica_messages_rejected_total (a bounded set).
const (
	reasonMalformed = "malformed"
	reasonCluster   = "other_cluster"
	reasonSender    = "unknown_sender"
	reasonInbox     = "inbox_full"
)

type metrics struct {
	sentMessages, recvMessages *prometheus.CounterVec // kind
	sentBytes, recvBytes       prometheus.Counter
	rejected                   *prometheus.CounterVec // reason
	ignored                    prometheus.Counter
	dropped                    prometheus.Counter
	cut                        prometheus.Counter
}

func newMetrics(s *Sharer, reg prometheus.Registerer) *metrics {
	m := &metrics{
		sentMessages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_replica_messages_sent_total",
			Help: "Messages sent to peer gateway replicas, by kind (load, prefix); one per packet and peer.",
		}, []string{"kind"}),
		recvMessages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_replica_messages_received_total",
			Help: "Messages from peer gateway replicas applied, by kind (load, prefix).",
		}, []string{"kind"}),
		sentBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_gateway_replica_sent_bytes_total",
			Help: "Bytes of replica messages sent (before encryption), over every peer.",
		}),
		recvBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_gateway_replica_received_bytes_total",
			Help: "Bytes of replica messages received (after decryption).",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_replica_messages_rejected_total",
			Help: "Replica messages dropped, by reason: malformed, other_cluster, unknown_sender (not a live " +
				"member of the pool), inbox_full.",
		}, []string{"reason"}),
		ignored: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_gateway_replica_entries_ignored_total",
			Help: "Load figures and prefix routes from peers ignored because they name a pod this replica does " +
				"not know or a model the pod does not serve.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_gateway_replica_prefix_routes_dropped_total",
			Help: "Prefix routes not shared because the batch had reached --replica-max-batch-bytes.",
		}),
		cut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_gateway_replica_streams_cut_total",
			Help: "Incoming replica-pool TCP streams cut for exceeding the size limit before authentication.",
		}),
	}
	for _, k := range []string{"load", "prefix"} {
		m.sentMessages.WithLabelValues(k)
		m.recvMessages.WithLabelValues(k)
	}
	for _, r := range []string{reasonMalformed, reasonCluster, reasonSender, reasonInbox} {
		m.rejected.WithLabelValues(r)
	}
	if reg == nil {
		return m
	}
	reg.MustRegister(m.sentMessages, m.recvMessages, m.sentBytes, m.recvBytes, m.rejected, m.ignored, m.dropped,
		m.cut,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "switchyard_gateway_replica_peers",
			Help: "Peer gateway replicas of this cluster alive in the replica pool.",
		}, func() float64 { return float64(s.Peers()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "switchyard_gateway_replica_state_bytes",
			Help: "Estimated memory of the replica sharing state: the peers' load figures and the prefix batch.",
		}, func() float64 { return float64(s.StateBytes()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "switchyard_gateway_replica_peer_inflight_requests",
			Help: "Requests the peer replicas report in flight, over every pod (what this replica adds to its own).",
		}, func() float64 { return float64(s.PeerInFlight()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "switchyard_gateway_replica_report_age_seconds",
			Help: "Age of the stalest peer's newest load report (0 with no peer).",
		}, func() float64 { return s.OldestReport().Seconds() }),
	)
	return m
}

func kindName(k byte) string {
	if k == kindLoad {
		return "load"
	}
	return "prefix"
}
