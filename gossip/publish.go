package gossip

import (
	"fmt"
	"sync"

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

// Publish spreads a capacity summary to the pool. The node copies s and fills in the node name,
// sequence number, schema version, and (when empty) cluster, region, gateway URL and generation
// time from its configuration and clock. Summaries that fit one packet travel as one broadcast;
// larger ones are split into chunks; a newer summary replaces queued chunks of an older one.
// Publish does not throttle: callers publish on a significant change at most every 250 ms and
// otherwise every 2 s (see Publisher). It returns the copy that was sent.
func (n *Node) Publish(s *gossipv1.CapacitySummary) (*gossipv1.CapacitySummary, error) {
	if s == nil {
		return nil, fmt.Errorf("gossip: publish: nil summary")
	}
	out := n.stamp(s)
	blob, err := EncodeSummary(out)
	if err != nil {
		return nil, fmt.Errorf("gossip: publish: %w", err)
	}
	if len(blob) > n.cfg.MaxSummaryBytes {
		return nil, fmt.Errorf("gossip: publish: summary is %d bytes, limit %d", len(blob), n.cfg.MaxSummaryBytes)
	}
	msgs, err := encodeChunks(out.GetNode(), out.GetSequence(), blob, n.cfg.Timings.UDPBufferSize-packetReserve)
	if err != nil {
		return nil, fmt.Errorf("gossip: publish: %w", err)
	}
	n.store.apply(out, n.now())
	for i, m := range msgs {
		n.queue.QueueBroadcast(&chunkBroadcast{node: out.GetNode(), seq: out.GetSequence(), index: i, msg: m})
	}
	n.metrics.published.Inc()
	n.subs.notify()
	return out, nil
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
