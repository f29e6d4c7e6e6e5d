package gossip

import (
	"sync"
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
	now := n.now()
	if c.seq > n.futureBound(now) {
		// Forged or from a clock far ahead: neither assembled (it would hold back the node's
		// real chunks), relayed, nor followed by our own sequencer.
		n.countRejected(ErrFuture)
		n.log.Debug("gossip summary chunk from the future dropped", "from", c.node, "sequence", c.seq)
		return
	}
	if c.node == n.cfg.NodeName {
		// Our own summary from a previous incarnation: continue above its sequence.
		n.seq.advancePast(c.seq)
		return
	}
	// Sequences are the publisher's clock in nanoseconds: the gap to the newest one held tells a
	// heartbeat delta (relayed as often as full summaries) from one of a quick series.
	prev := n.store.newest(c.node)
	heartbeat := prev == 0 || c.seq <= prev || time.Duration(c.seq-prev) >= heartbeatGap
	out, sum, err := n.store.addChunk(c, now)
	if out == chunkForged {
		n.metrics.rejected.WithLabelValues(RejectForgedChunk).Inc()
		n.log.Debug("gossip forged chunk dropped", "from", c.node, "sequence", c.seq, "index", c.index)
		return
	}
	if out == chunkRejected {
		n.countRejected(err)
		n.log.Debug("gossip summary rejected", "from", c.node, "sequence", c.seq, "err", err)
		return
	}
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
		if c.delta {
			n.metrics.deltas.WithLabelValues("applied").Inc()
		}
		n.recordApplied(sum, "broadcast", now)
		n.subs.notify()
	case chunkParked:
		n.metrics.deltas.WithLabelValues("parked").Inc()
	case chunkBaseMissed:
		n.metrics.deltas.WithLabelValues("parked").Inc()
		n.requestFull(c.node, now)
	}
	relay := append([]byte(nil), b...)
	n.queueFor(c.delta, heartbeat).QueueBroadcast(&chunkBroadcast{node: c.node, seq: c.seq, index: c.index, msg: relay,
		supersedes: out == chunkApplied})
}

// fullRequests limits how often this node asks each publisher for a full summary.
type fullRequests struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// allow reports whether node may be asked at now, and if so records it.
func (f *fullRequests) allow(node string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.last[node]; ok && now.Sub(t) < baseGrace {
		return false
	}
	if f.last == nil || len(f.last) > 1024 {
		f.last = map[string]time.Time{} // forget: at worst one extra request per publisher
	}
	f.last[node] = now
	return true
}

// requestFull asks publisher, directly and at most once per baseGrace, for a full summary: this
// node holds a delta it cannot apply whose base it should have received by now.
func (n *Node) requestFull(publisher string, now time.Time) {
	ml := n.memberlist()
	if ml == nil || !n.wanted.allow(publisher, now) {
		return
	}
	for _, m := range ml.Members() {
		if m.Name == publisher {
			if err := ml.SendBestEffort(m, encodeWantFull(publisher)); err != nil {
				n.log.Debug("gossip full-summary request", "to", publisher, "err", err)
				return
			}
			n.metrics.deltas.WithLabelValues("full_requested").Inc()
			return
		}
	}
}

// handleWantFull notes a peer's request for this node's full summary; the next Publish sends one.
func (n *Node) handleWantFull(b []byte) {
	node, err := decodeWantFull(b)
	if err != nil {
		n.metrics.decodeErrors.Inc()
		return
	}
	if node == n.cfg.NodeName {
		n.pub.wantFull.Store(true)
	}
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
	if seq > n.futureBound(n.now()) {
		// Forged or from a clock far ahead: it would outlast every later summary of the node.
		n.countRejected(ErrFuture)
		n.log.Debug("gossip leave from the future dropped", "node", node, "sequence", seq)
		return
	}
	if node == n.cfg.NodeName || n.store.newest(node) > seq {
		return
	}
	if held := n.store.summaryOf(node); held != nil && !n.departureTrusted(held) {
		// Anyone with the gossip key can send a leave: for an authenticated publisher it is
		// neither recorded nor relayed, and the summary ages out if the publisher did leave.
		n.metrics.rejected.WithLabelValues(RejectDeparture).Inc()
		n.log.Debug("gossip leave of an authenticated publisher not trusted", "node", node, "sequence", seq)
		return
	}
	if !n.peers.recordLeave(node, seq) {
		return
	}
	n.queue.QueueBroadcast(&leaveBroadcast{node: node, seq: seq, msg: append([]byte(nil), b...)})
	n.subs.notify()
}

// announceLeave queues this node's leave message ahead of memberlist's own leave.
func (n *Node) announceLeave() {
	seq := n.seq.next(uint64(n.now().UnixNano()))
	n.queue.QueueBroadcast(
		&leaveBroadcast{node: n.cfg.NodeName, seq: seq, msg: encodeLeave(n.cfg.NodeName, seq), own: true},
	)
}

// leaveBroadcast is a node's leave announcement in the broadcast queue. The node's own replaces
// every queued chunk of its older summaries; a relayed one replaces only older leaves, since any
// key holder can send a leave and it must not cancel the relay of a publisher's summaries.
type leaveBroadcast struct {
	node string
	seq  uint64
	msg  []byte
	own  bool
}

// Invalidates reports whether b makes other pointless: older leaves of the same node and, for the
// node's own leave, its older chunks.
func (b *leaveBroadcast) Invalidates(other memberlist.Broadcast) bool {
	switch o := other.(type) {
	case *chunkBroadcast:
		return b.own && o.node == b.node && o.seq < b.seq
	case *leaveBroadcast:
		return o.node == b.node && o.seq <= b.seq
	}
	return false
}

// Message returns the encoded leave message.
func (b *leaveBroadcast) Message() []byte { return b.msg }

// Finished is called when the message leaves the queue; nothing waits for it.
func (b *leaveBroadcast) Finished() {}
