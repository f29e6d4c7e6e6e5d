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
const SchemaVersion = 3

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

// publisher is a node's publishing state: the last full summary, which its deltas are against,
// the pacing of its deltas (Config.BroadcastBudget) and the publication it holds back.
type publisher struct {
	mu        sync.Mutex // serialises Publish and the sending of held publications
	base      *gossipv1.CapacitySummary
	baseBytes int // encoded size of base
	baseMsgs  int // bytes of the messages that carried base, with their framing
	baseAt    time.Time
	lastSeq   uint64        // sequence of the previous summary or delta sent
	lastCall  time.Time     // when Publish was last called
	cadence   time.Duration // the gap between the last two calls of Publish
	wantFull  atomic.Bool   // a peer lacking the base asked for a full summary
	pace      pacer
	held      *heldDelta
	heldUntil atomic.Int64 // when held may be sent, Unix nanoseconds; 0 when nothing is held
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
// older one. Callers publish on a significant change at most every 250 ms and otherwise every
// 1 s (see Publisher). When the pool's publishers would together exceed Config.BroadcastBudget,
// the node holds a delta back and sends, once its share of the budget allows (at most 500 ms
// after its previous delta), the summary of a later Publish in its place, or the held one when
// no later Publish comes: changes are delayed, never lost. It returns the copy that was
// published, as receivers rebuild it.
func (n *Node) Publish(s *gossipv1.CapacitySummary) (*gossipv1.CapacitySummary, error) {
	if s == nil {
		return nil, fmt.Errorf("gossip: publish: nil summary")
	}
	n.pub.mu.Lock()
	defer n.pub.mu.Unlock()
	out := n.stamp(s)
	n.cfg.Precision.apply(out)
	if key := n.signingKey.Load(); key != nil {
		if err := SignSummary(out, *key); err != nil {
			return nil, fmt.Errorf("gossip: publish: %w", err)
		}
	}
	now := n.now()
	if p := &n.pub; !p.lastCall.IsZero() {
		p.cadence = now.Sub(p.lastCall)
	}
	n.pub.lastCall = now
	if blob := n.deltaBlob(out, now); blob != nil {
		n.sendOrHold(&heldDelta{summary: out, blob: blob}, now)
	} else if err := n.sendFull(out, now); err != nil {
		return nil, err
	}
	n.metrics.published.Inc()
	n.subs.notify()
	return out, nil
}

// sendFull encodes out in full and queues it; a held delta is superseded. Called with n.pub.mu
// held.
func (n *Node) sendFull(out *gossipv1.CapacitySummary, now time.Time) error {
	blob, err := EncodeSummary(out)
	if err != nil {
		return fmt.Errorf("gossip: publish: %w", err)
	}
	if len(blob) > n.cfg.MaxSummaryBytes {
		return fmt.Errorf("gossip: publish: summary is %d bytes, limit %d", len(blob), n.cfg.MaxSummaryBytes)
	}
	msgs, err := encodeParts(
		msgChunk,
		out.GetNode(),
		out.GetSequence(),
		blob,
		n.cfg.Timings.UDPBufferSize-packetReserve,
		n.peers.allReadLinkedChunks(),
	)
	if err != nil {
		return fmt.Errorf("gossip: publish: %w", err)
	}
	n.dropHeld()
	p := &n.pub
	p.base, p.baseBytes, p.baseMsgs, p.baseAt = out, len(blob), messageBytes(msgs), now
	p.wantFull.Store(false)
	n.store.applyHeld(heldSummary{summary: out}, now)
	n.queueMsgs(n.queue, out, msgs)
	return nil
}

// sendDelta queues the delta d. Called with n.pub.mu held.
func (n *Node) sendDelta(d *heldDelta, now time.Time) {
	msgs, err := encodeParts(
		msgDelta,
		d.summary.GetNode(),
		d.summary.GetSequence(),
		d.blob,
		n.cfg.Timings.UDPBufferSize-packetReserve,
		n.peers.allReadLinkedChunks(),
	)
	if err != nil { // a delta is at most half a full summary, which encoded
		n.log.Error("gossip encode delta", "err", err)
		return
	}
	heartbeat := time.Duration(d.summary.GetSequence()-n.pub.lastSeq) >= heartbeatGap
	q := n.queueFor(true, heartbeat)
	n.queueMsgs(q, d.summary, msgs)
	n.pub.pace.spend(now, float64(messageBytes(msgs)*n.sendsPerNode(q)), n.deltaRate())
	n.metrics.deltas.WithLabelValues("published").Inc()
}

// queueMsgs queues the chunks of out and records it as the last summary sent.
func (n *Node) queueMsgs(q *memberlist.TransmitLimitedQueue, out *gossipv1.CapacitySummary, msgs [][]byte) {
	n.pub.lastSeq = out.GetSequence()
	for i, m := range msgs {
		q.QueueBroadcast(&chunkBroadcast{node: out.GetNode(), seq: out.GetSequence(), index: i, msg: m, supersedes: true})
	}
}

// deltaBlob returns the encoded delta of out against the last full summary, or nil when a full
// summary is due: there is no base yet, the base is older than FullSummaryInterval, a peer asked
// for a full one, the delta cannot express out, or it would be more than half the full size.
// The delta is compact unless a member does not read every delta this version writes (a node of an
// older version, during a rolling upgrade); then it is written as the first deltas were, which
// every version reads. Called with n.pub.mu held.
func (n *Node) deltaBlob(out *gossipv1.CapacitySummary, now time.Time) []byte {
	p := &n.pub
	age := now.Sub(p.baseAt)
	if p.base == nil || age >= n.cfg.FullSummaryInterval || (p.wantFull.Load() && age >= minFullGap) {
		return nil
	}
	d := diffSummary(p.base, out)
	if d == nil || (len(out.GetSignature()) > 0 && !n.peers.allReadSignedDeltas()) {
		return nil // a member that predates signatures would drop a signed delta: send in full
	}
	encode := encodeDelta
	if !n.peers.allReadOwnDeltas() {
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
	// supersedes is set on the publisher's own chunks and on a relayed chunk that completed a
	// summary this node applied: only those replace queued chunks. A relayed piece of a message
	// not (yet) complete may be forged, and must not cancel the relay of a genuine one.
	supersedes bool
}

// Invalidates reports whether b replaces other in the queue: when b supersedes, any chunk of an
// older summary from the same node, or the chunk of the same index of the same summary.
func (b *chunkBroadcast) Invalidates(other memberlist.Broadcast) bool {
	o, ok := other.(*chunkBroadcast)
	if !ok || o.node != b.node || !b.supersedes {
		return false
	}
	return o.seq < b.seq || (o.seq == b.seq && o.index == b.index)
}

// Message returns the encoded chunk.
func (b *chunkBroadcast) Message() []byte { return b.msg }

// Finished is called when the chunk leaves the queue; nothing waits for it.
func (b *chunkBroadcast) Finished() {}

var _ memberlist.Broadcast = (*chunkBroadcast)(nil)
