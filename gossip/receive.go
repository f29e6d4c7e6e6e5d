package gossip

import (
	"time"

	"github.com/hashicorp/memberlist"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// handleChunk applies a received summary chunk and relays it when it was new to this node.
func (n *Node) handleChunk(b []byte) {
	c, err := decodeChunk(b)
	if err != nil {
		n.metrics.decodeErrors.Inc()
		return
	}
	n.metrics.received.WithLabelValues("broadcast").Inc()
	if c.node == n.cfg.NodeName {
		// Our own summary from a previous incarnation: continue above its sequence.
		n.seq.advancePast(c.seq)
		return
	}
	now := n.now()
	out, sum, err := n.store.addChunk(c, now)
	if err != nil {
		n.metrics.decodeErrors.Inc()
		n.log.Debug("gossip bad summary chunk", "from", c.node, "err", err)
		return
	}
	switch out {
	case chunkStale, chunkDuplicate:
		if out == chunkStale {
			n.metrics.stale.Inc()
		}
		return
	case chunkApplied:
		n.recordApplied(sum, "broadcast", now)
		n.subs.notify()
	}
	relay := append([]byte(nil), b...)
	n.queue.QueueBroadcast(&chunkBroadcast{node: c.node, seq: c.seq, index: c.index, msg: relay})
}

// recordApplied counts an applied summary and its propagation delay.
func (n *Node) recordApplied(s *gossipv1.CapacitySummary, path string, now time.Time) {
	n.metrics.applied.WithLabelValues(path).Inc()
	n.metrics.appliedCount.Add(1)
	if g := s.GetGeneratedAtUnixNano(); g > 0 {
		if d := now.Sub(time.Unix(0, g)); d >= 0 {
			n.metrics.propagation.Observe(d.Seconds())
		}
	}
}

// advancePast makes the next sequence exceed seq.
func (s *sequencer) advancePast(seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = max(s.last, seq)
}

// handleLeave records a peer's announced departure and relays the announcement once.
func (n *Node) handleLeave(b []byte) {
	node, seq, err := decodeLeave(b)
	if err != nil {
		n.metrics.decodeErrors.Inc()
		return
	}
	if node == n.cfg.NodeName || n.store.newest(node) > seq || !n.peers.recordLeave(node, seq) {
		return
	}
	n.queue.QueueBroadcast(&leaveBroadcast{node: node, seq: seq, msg: append([]byte(nil), b...)})
	n.subs.notify()
}

// announceLeave queues this node's leave message ahead of memberlist's own leave.
func (n *Node) announceLeave() {
	seq := n.seq.next(uint64(n.now().UnixNano()))
	n.queue.QueueBroadcast(&leaveBroadcast{node: n.cfg.NodeName, seq: seq, msg: encodeLeave(n.cfg.NodeName, seq)})
}

// leaveBroadcast is a node's leave announcement in the broadcast queue. It replaces every queued
// chunk of that node's older summaries.
type leaveBroadcast struct {
	node string
	seq  uint64
	msg  []byte
}

// Invalidates reports whether b makes other pointless: older chunks or leaves of the same node.
func (b *leaveBroadcast) Invalidates(other memberlist.Broadcast) bool {
	switch o := other.(type) {
	case *chunkBroadcast:
		return o.node == b.node && o.seq < b.seq
	case *leaveBroadcast:
		return o.node == b.node && o.seq <= b.seq
	}
	return false
}

// Message returns the encoded leave message.
func (b *leaveBroadcast) Message() []byte { return b.msg }

// Finished is called when the message leaves the queue; nothing waits for it.
func (b *leaveBroadcast) Finished() {}
