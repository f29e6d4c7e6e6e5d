package gossip

import (
	"cmp"
	"slices"
	"sync/atomic"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// Stats are a node's traffic counters since it was created.
type Stats struct {
	// PacketBytesSent and PacketBytesReceived count UDP payload bytes (all memberlist traffic).
	PacketBytesSent, PacketBytesReceived uint64
	// StreamBytesSent and StreamBytesReceived count TCP bytes (joins, push/pull).
	StreamBytesSent, StreamBytesReceived uint64
	// OwnBroadcastBytes counts summary chunks this node published and sent.
	OwnBroadcastBytes uint64
	// RelayedBroadcastBytes counts summary chunks of other nodes this node relayed.
	RelayedBroadcastBytes uint64
	// SummariesApplied counts summaries (own excluded) that replaced an older one.
	SummariesApplied uint64
}

// metrics are the node's Prometheus collectors and plain counters.
type metrics struct {
	members          *prometheus.GaugeVec
	summaryAge       *prometheus.GaugeVec
	received         *prometheus.CounterVec
	applied          *prometheus.CounterVec
	stale            prometheus.Counter
	rejected         *prometheus.CounterVec
	decodeErrors     prometheus.Counter
	invalidMeta      prometheus.Counter
	propagation      prometheus.Histogram
	bytes            *prometheus.CounterVec
	broadcastBytes   *prometheus.CounterVec
	published        prometheus.Counter
	deltas           *prometheus.CounterVec
	keyChanges       prometheus.Counter
	keyErrors        prometheus.Counter
	signingKeyErrors prometheus.Counter
	streamsCut       prometheus.Counter
	joinAttempts     *prometheus.CounterVec
	digests          *prometheus.CounterVec
	digestBytes      *prometheus.HistogramVec

	packetSent, packetRecv, streamSent, streamRecv atomic.Uint64
	ownBytes, relayedBytes, appliedCount           atomic.Uint64
}

func newMetrics(reg prometheus.Registerer, sub string, queueDepth func() float64) (*metrics, error) {
	const ns = "switchyard"
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: ns, Subsystem: sub, Name: name, Help: help}
	}
	m := &metrics{
		members: prometheus.NewGaugeVec(
			prometheus.GaugeOpts(opts("members", "Known members by state (alive, suspect, dead, left).")),
			[]string{"state"},
		),
		summaryAge: prometheus.NewGaugeVec(
			prometheus.GaugeOpts(opts("summary_age_seconds", "Age of the newest summary per publishing node.")),
			[]string{"node", "cluster"},
		),
		received: prometheus.NewCounterVec(
			prometheus.CounterOpts(
				opts("summaries_received_total", "Summary messages received (chunks on broadcast, summaries on push/pull)."),
			),
			[]string{"path"},
		),
		applied: prometheus.NewCounterVec(
			prometheus.CounterOpts(opts("summaries_applied_total", "Summaries that replaced an older one from the same node.")),
			[]string{"path"},
		),
		stale: prometheus.NewCounter(
			prometheus.CounterOpts(
				opts("summaries_stale_total", "Summary messages dropped because a newer sequence was already held."),
			),
		),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts(opts(
			"summaries_rejected_total",
			"Received summaries and chunks refused before storing, by reason: clock_skew (sequence or generation time beyond "+
				"the allowed clock skew), verifier (the verifier refused it), forged_chunk (a linked chunk whose digest is not "+
				"the one its message names), departure (a leave or memberlist departure of an authenticated publisher, not "+
				"trusted).",
		)), []string{"reason"}),
		decodeErrors: prometheus.NewCounter(
			prometheus.CounterOpts(opts("decode_errors_total", "Gossip messages that could not be decoded.")),
		),
		invalidMeta: prometheus.NewCounter(
			prometheus.CounterOpts(opts("invalid_metadata_total", "Member metadata that failed validation.")),
		),
		propagation: prometheus.NewHistogram(
			prometheus.HistogramOpts{
				Namespace: ns,
				Subsystem: sub,
				Name:      "summary_propagation_seconds",
				Help:      "Time from a summary's generation to its application here.",
				Buckets:   prometheus.ExponentialBuckets(0.01, 2, 12),
			},
		),
		bytes: prometheus.NewCounterVec(
			prometheus.CounterOpts(opts("transport_bytes_total", "Bytes on the gossip transport.")),
			[]string{"direction", "kind"},
		),
		broadcastBytes: prometheus.NewCounterVec(
			prometheus.CounterOpts(opts("broadcast_sent_bytes_total", "Summary chunk bytes sent, own or relayed.")),
			[]string{"origin"},
		),
		published: prometheus.NewCounter(
			prometheus.CounterOpts(opts("published_total", "Summaries published by this node.")),
		),
		deltas: prometheus.NewCounterVec(prometheus.CounterOpts(opts(
			"deltas_total",
			"Summary deltas by event: published here, applied, parked for want of their base, full summary requested of their "+
				"publisher, held back here by the broadcast budget, superseded while held.",
		)), []string{"event"}),
		keyChanges: prometheus.NewCounter(
			prometheus.CounterOpts(opts("keyring_changes_total", "Keyring replacements applied.")),
		),
		keyErrors: prometheus.NewCounter(
			prometheus.CounterOpts(
				opts("keyring_reload_errors_total", "Key-file reloads refused (unreadable file or invalid keys)."),
			),
		),
		signingKeyErrors: prometheus.NewCounter(
			prometheus.CounterOpts(
				opts("signing_key_reload_errors_total", "Signing-key-file reloads refused (unreadable file or invalid key)."),
			),
		),
		streamsCut: prometheus.NewCounter(prometheus.CounterOpts(opts(
			"streams_cut_total",
			"Incoming TCP streams cut before memberlist read them whole: an encrypted message header declaring more than "+
				"MaxStreamBytes, or more bytes than that in all.",
		))),
		joinAttempts: prometheus.NewCounterVec(
			prometheus.CounterOpts(opts("join_attempts_total", "Attempts to join the seeds, by result.")),
			[]string{"result"},
		),
		digests: prometheus.NewCounterVec(prometheus.CounterOpts(opts(
			"digests_total",
			"Region digest messages by event: published here, relayed here from another pool, applied, parked for want "+
				"of their full digest, rejected (by the digest verifier), clock_skew, forged_chunk, too_large (not "+
				"published: over MaxDigestBytes), and chunk_received.",
		)), []string{"event"}),
		digestBytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: sub, Name: "digest_published_bytes",
			Help:    "Encoded size of the region digests this node published, by kind (full, delta).",
			Buckets: prometheus.ExponentialBuckets(64, 2, 14),
		}, []string{"kind"}),
	}
	queue := prometheus.NewGaugeFunc(
		prometheus.GaugeOpts(opts("broadcast_queue_depth", "Summary chunks waiting to be gossiped.")),
		queueDepth,
	)
	for _, c := range []prometheus.Collector{m.members, m.summaryAge, m.received, m.applied, m.stale, m.rejected,
		m.decodeErrors, m.invalidMeta, m.propagation, m.bytes, m.broadcastBytes, m.published, m.deltas, m.keyChanges,
		m.keyErrors, m.signingKeyErrors, m.streamsCut, m.joinAttempts, m.digests, m.digestBytes, queue} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) countPacket(sent bool, n int) {
	if sent {
		m.packetSent.Add(uint64(n))
		m.bytes.WithLabelValues("sent", "packet").Add(float64(n))
		return
	}
	m.packetRecv.Add(uint64(n))
	m.bytes.WithLabelValues("received", "packet").Add(float64(n))
}

func (m *metrics) countStream(sent bool, n int) {
	if sent {
		m.streamSent.Add(uint64(n))
		m.bytes.WithLabelValues("sent", "stream").Add(float64(n))
		return
	}
	m.streamRecv.Add(uint64(n))
	m.bytes.WithLabelValues("received", "stream").Add(float64(n))
}

func (m *metrics) countBroadcast(own bool, n int) {
	if own {
		m.ownBytes.Add(uint64(n))
		m.broadcastBytes.WithLabelValues("own").Add(float64(n))
		return
	}
	m.relayedBytes.Add(uint64(n))
	m.broadcastBytes.WithLabelValues("relayed").Add(float64(n))
}

func (m *metrics) stats() Stats {
	return Stats{
		PacketBytesSent:       m.packetSent.Load(),
		PacketBytesReceived:   m.packetRecv.Load(),
		StreamBytesSent:       m.streamSent.Load(),
		StreamBytesReceived:   m.streamRecv.Load(),
		OwnBroadcastBytes:     m.ownBytes.Load(),
		RelayedBroadcastBytes: m.relayedBytes.Load(),
		SummariesApplied:      m.appliedCount.Load(),
	}
}

// Bounds of the label values taken from peers (node and cluster names): a name that is empty,
// longer than maxLabelLen bytes or not UTF-8 (which would make client_golang panic) is counted
// as otherLabel, and so are the nodes past the first maxAgeSeries.
const (
	otherLabel   = "other"
	maxLabelLen  = maxNodeName
	maxAgeSeries = 1000
)

// labelValue returns v when it may be a label value as is, else otherLabel.
func labelValue(v string) string {
	if v == "" || len(v) > maxLabelLen || !utf8.ValidString(v) {
		return otherLabel
	}
	return v
}

// ageSample is one publishing node's summary age.
type ageSample struct {
	node, cluster string
	age           float64
}

// boundAges returns the samples of summary_age_seconds: one per node, in name order, for the
// first maxAgeSeries nodes with valid names; the rest fold into one (other, other) sample that
// carries the oldest of their ages.
func boundAges(in []ageSample) []ageSample {
	slices.SortFunc(in, func(a, b ageSample) int { return cmp.Compare(a.node, b.node) })
	out := make([]ageSample, 0, min(len(in), maxAgeSeries+1))
	rest := ageSample{node: otherLabel, cluster: otherLabel, age: -1}
	for _, s := range in {
		node, cluster := labelValue(s.node), labelValue(s.cluster)
		if node == otherLabel || len(out) >= maxAgeSeries {
			rest.age = max(rest.age, s.age)
			continue
		}
		out = append(out, ageSample{node: node, cluster: cluster, age: s.age})
	}
	if rest.age >= 0 {
		out = append(out, rest)
	}
	return out
}
