package gossip

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"google.golang.org/protobuf/proto"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// SchemaVersion is the CapacitySummary schema this package writes.
const SchemaVersion = 1

// packetReserve is the part of a UDP packet left to memberlist's framing (compound header, user
// message header, AES-GCM nonce and tag) when sizing summary chunks.
const packetReserve = 64

// sequencer hands out sequence numbers. It starts at the node's creation time in Unix nanoseconds,
// so a restarted node continues above every sequence its previous incarnation used.
type sequencer struct {
	mu   sync.Mutex
	last uint64
}

func (s *sequencer) next(nowNanos uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = max(s.last+1, nowNanos)
	return s.last
}

// minFullGap is the least time between two full summaries sent because peers asked for one.
const minFullGap = time.Second

// publisher is a node's publishing state: the last full summary, which its deltas are against.
type publisher struct {
	mu        sync.Mutex // serialises Publish
	base      *gossipv1.CapacitySummary
	baseBytes int // encoded size of base
	baseAt    time.Time
	lastAt    time.Time   // when the previous summary or delta was published
	wantFull  atomic.Bool // a peer lacking the base asked for a full summary
}

// heartbeatGap is the gap after which a delta counts as a heartbeat: a publisher that has been
// quiet this long (the gateway publishes every 250 ms while its figures change, every 1 s when
// they do not) will not repair a lost delta soon, and a receiver that misses two heartbeats sees
// the summary go stale.
const heartbeatGap = time.Second

// Publish spreads a capacity summary to the pool. The node copies s, rounds its figures to the
// configured Precision, and fills in the node name, sequence number, schema version, and (when
// empty) cluster, region, gateway URL and generation time from its configuration and clock. It
// sends either the full summary or, when it can, a much smaller delta against the last full one
// (see Config.FullSummaryInterval); receivers rebuild the complete summary either way. Messages
// that do not fit one packet are split into chunks; a newer summary replaces queued chunks of an
// older one. Publish does not throttle: callers publish on a significant change at most every
// 250 ms and otherwise every 1 s (see Publisher). It returns the copy that was sent, as receivers
// rebuild it.
func (n *Node) Publish(s *gossipv1.CapacitySummary) (*gossipv1.CapacitySummary, error) {
	if s == nil {
		return nil, fmt.Errorf("gossip: publish: nil summary")
	}
	n.pub.mu.Lock()
	defer n.pub.mu.Unlock()
	out := n.stamp(s)
	n.cfg.Precision.apply(out)
	now := n.now()
	kind, base, blob := msgDelta, n.pub.base, n.deltaBlob(out, now)
	if blob == nil {
		var err error
		kind, base = msgChunk, nil
		if blob, err = EncodeSummary(out); err != nil {
			return nil, fmt.Errorf("gossip: publish: %w", err)
		}
		if len(blob) > n.cfg.MaxSummaryBytes {
			return nil, fmt.Errorf("gossip: publish: summary is %d bytes, limit %d", len(blob), n.cfg.MaxSummaryBytes)
		}
	}
	msgs, err := encodeParts(kind, out.GetNode(), out.GetSequence(), blob, n.cfg.Timings.UDPBufferSize-packetReserve)
	if err != nil {
		return nil, fmt.Errorf("gossip: publish: %w", err)
	}
	if kind == msgChunk {
		n.pub.base, n.pub.baseBytes, n.pub.baseAt = out, len(blob), now
		n.pub.wantFull.Store(false)
	}
	n.store.applyHeld(heldSummary{summary: out, base: base}, now)
	q := n.queueFor(kind == msgDelta, now.Sub(n.pub.lastAt) >= heartbeatGap)
	n.pub.lastAt = now
	for i, m := range msgs {
		q.QueueBroadcast(&chunkBroadcast{node: out.GetNode(), seq: out.GetSequence(), index: i, msg: m})
	}
	n.metrics.published.Inc()
	if kind == msgDelta {
		n.metrics.deltas.WithLabelValues("published").Inc()
	}
	n.subs.notify()
	return out, nil
}

// deltaBlob returns the encoded delta of out against the last full summary, or nil when a full
// summary is due: there is no base yet, the base is older than FullSummaryInterval, a peer asked
// for a full one, the delta cannot express out, or it would be more than half the full size.
// The delta is compact unless a member does not read compact deltas (a node of an older version,
// during a rolling upgrade); then it is written as those nodes read it. Called with n.pub.mu held.
func (n *Node) deltaBlob(out *gossipv1.CapacitySummary, now time.Time) []byte {
	p := &n.pub
	age := now.Sub(p.baseAt)
	if p.base == nil || age >= n.cfg.FullSummaryInterval || (p.wantFull.Load() && age >= minFullGap) {
		return nil
	}
	d := diffSummary(p.base, out)
	if d == nil {
		return nil
	}
	encode := encodeDelta
	if !n.peers.allReadCompactDeltas() {
		encode = func(d *gossipv1.SummaryDelta) ([]byte, error) { return encodeBlob(legacyDelta(d, out)) }
	}
	blob, err := encode(d)
	if err != nil || 2*len(blob) > p.baseBytes {
		return nil
	}
	return blob
}

// queueFor returns the broadcast queue for a delta (a heartbeat one after a quiet gap, or one a
// later delta soon repairs) or for a full summary.
func (n *Node) queueFor(delta, heartbeat bool) *memberlist.TransmitLimitedQueue {
	switch {
	case delta && heartbeat:
		return n.beatQueue
	case delta:
		return n.deltaQueue
	}
	return n.queue
}

// stamp returns a copy of s carrying this node's identity, a fresh sequence and the current time.
func (n *Node) stamp(s *gossipv1.CapacitySummary) *gossipv1.CapacitySummary {
	out := proto.Clone(s).(*gossipv1.CapacitySummary)
	now := n.now()
	out.SchemaVersion = SchemaVersion
	out.Node = n.cfg.NodeName
	out.Sequence = n.seq.next(uint64(now.UnixNano()))
	if out.Cluster == "" {
		out.Cluster = n.cfg.Cluster
	}
	if out.Region == "" {
		out.Region = n.cfg.Region
	}
	if out.GatewayUrl == "" {
		out.GatewayUrl = n.cfg.AdvertiseURL
	}
	if out.GeneratedAtUnixNano == 0 {
		out.GeneratedAtUnixNano = now.UnixNano()
	}
	return out
}

// chunkBroadcast is one summary chunk in the broadcast queue, own or relayed.
type chunkBroadcast struct {
	node  string
	seq   uint64
	index int
	msg   []byte
}

// Invalidates reports whether b replaces other in the queue: any chunk of an older summary from
// the same node, or the same chunk queued twice.
func (b *chunkBroadcast) Invalidates(other memberlist.Broadcast) bool {
	o, ok := other.(*chunkBroadcast)
	if !ok || o.node != b.node {
		return false
	}
	return o.seq < b.seq || (o.seq == b.seq && o.index == b.index)
}

// Message returns the encoded chunk.
func (b *chunkBroadcast) Message() []byte { return b.msg }

// Finished is called when the chunk leaves the queue; nothing waits for it.
func (b *chunkBroadcast) Finished() {}

var _ memberlist.Broadcast = (*chunkBroadcast)(nil)
