package kvevents

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of a received message, the result label of
// switchyard_gateway_kv_events_messages_total.
const (
	resultApplied    = "applied"
	resultMalformed  = "malformed"
	resultBadTopic   = "bad_topic"
	resultUnknownPod = "unknown_pod"
	resultFrames     = "bad_frames"
	resultIndexFull  = "index_full"
)

// metrics are the subscriber's gateway metrics. Per-endpoint series exist only for endpoints in
// the gateway's endpoint set and go when the endpoint leaves, so a publisher cannot grow them.
type metrics struct {
	events   *prometheus.CounterVec // endpoint, kind
	messages *prometheus.CounterVec // result
	gaps     *prometheus.CounterVec // endpoint
	refused  *prometheus.CounterVec // reason
}

func newMetrics(idx *Index, reg prometheus.Registerer) *metrics {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_kv_events_total",
			Help: "KV cache events received from each endpoint, by kind (BlockStored, BlockRemoved, AllBlocksCleared, unknown).",
		}, []string{"endpoint", "kind"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_kv_events_messages_total",
			Help: "KV event messages received, by result (applied, malformed, bad_topic, unknown_pod, bad_frames, index_full).",
		}, []string{"result"}),
		gaps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_kv_events_sequence_gaps_total",
			Help: "Sequence gaps or restarts in an endpoint's KV event stream; each clears the endpoint's index entries.",
		}, []string{"endpoint"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_kv_events_refused_total",
			Help: "KV event connections closed or refused by the guard, by reason.",
		}, []string{"reason"}),
	}
	for _, r := range []string{resultApplied, resultMalformed, resultBadTopic, resultUnknownPod, resultFrames,
		resultIndexFull} {
		m.messages.WithLabelValues(r)
	}
	for _, r := range []string{refusedConnections, refusedFrame, refusedMessage, refusedFrames, refusedFraming,
		refusedHandshake, refusedPeer, refusedSpoofed} {
		m.refused.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.events, m.messages, m.gaps, m.refused, &indexCollector{idx: idx})
	}
	return m
}

// forget drops the series of an endpoint that left.
func (m *metrics) forget(addr string) {
	m.events.DeletePartialMatch(prometheus.Labels{"endpoint": addr})
	m.gaps.DeleteLabelValues(addr)
}

var (
	entriesDesc = prometheus.NewDesc("switchyard_gateway_kv_events_index_entries",
		"(block, pod) entries in the KV event index.", nil, nil)
	blocksDesc = prometheus.NewDesc("switchyard_gateway_kv_events_index_blocks",
		"Distinct block hashes in the KV event index.", nil, nil)
	bytesDesc = prometheus.NewDesc("switchyard_gateway_kv_events_index_bytes",
		"Memory of the KV event index's entries (entries × bytes per entry).", nil, nil)
	evictedDesc = prometheus.NewDesc("switchyard_gateway_kv_events_index_evictions_total",
		"Entries evicted from the KV event index by its bounds, by reason (pod_limit: the pod held its per-pod limit; "+
			"pod_share: the index was full and the pod held its fair share; capacity: the index was full).",
		[]string{"reason"}, nil)
	podLimitDesc = prometheus.NewDesc("switchyard_gateway_kv_events_index_pod_limit_entries",
		"Most (block, pod) entries one pod may hold in the KV event index now.", nil, nil)
	pendingDesc = prometheus.NewDesc("switchyard_gateway_kv_events_index_pending_entries",
		"Pending (block, pod) entries: blocks of requests just routed to a pod, before its events report them.", nil, nil)
	pendingDroppedDesc = prometheus.NewDesc("switchyard_gateway_kv_events_index_pending_dropped_total",
		"Pending entries dropped before their TTL because the pending set was full.", nil, nil)
)

// indexCollector reads the index's size when scraped.
type indexCollector struct{ idx *Index }

// Describe implements prometheus.Collector.
func (c *indexCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- entriesDesc
	ch <- blocksDesc
	ch <- bytesDesc
	ch <- evictedDesc
	ch <- podLimitDesc
	ch <- pendingDesc
	ch <- pendingDroppedDesc
}

// Collect implements prometheus.Collector.
func (c *indexCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.idx.Stats()
	ch <- prometheus.MustNewConstMetric(entriesDesc, prometheus.GaugeValue, float64(s.Entries))
	ch <- prometheus.MustNewConstMetric(blocksDesc, prometheus.GaugeValue, float64(s.Blocks))
	ch <- prometheus.MustNewConstMetric(bytesDesc, prometheus.GaugeValue, float64(s.Bytes))
	for r := range numEvictReasons {
		ch <- prometheus.MustNewConstMetric(evictedDesc, prometheus.CounterValue, float64(s.EvictedBy[r]), r.String())
	}
	ch <- prometheus.MustNewConstMetric(podLimitDesc, prometheus.GaugeValue, float64(s.PodLimit))
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(s.Pending))
	ch <- prometheus.MustNewConstMetric(pendingDroppedDesc, prometheus.CounterValue, float64(s.PendingDropped))
}
