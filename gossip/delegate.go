package gossip

import (
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/switchyard-dev/switchyard/gossip/vivaldi"
)

// delegate receives memberlist's callbacks. memberlist calls them from its packet and state
// goroutines, some (the event callbacks) with its node lock held: none of them may block or call
// back into the memberlist.
type delegate struct {
	n *Node
}

var (
	_ memberlist.Delegate      = (*delegate)(nil)
	_ memberlist.EventDelegate = (*delegate)(nil)
	_ memberlist.PingDelegate  = (*delegate)(nil)
)

// NodeMeta returns the node's encoded metadata.
func (d *delegate) NodeMeta(limit int) []byte {
	if len(d.n.meta) > limit {
		d.n.log.Error("gossip metadata exceeds limit", "bytes", len(d.n.meta), "limit", limit)
		return nil
	}
	return d.n.meta
}

// NotifyMsg handles a user message from a gossip packet.
func (d *delegate) NotifyMsg(b []byte) {
	if len(b) == 0 {
		return
	}
	switch b[0] {
	case msgChunk, msgDelta, msgLinked, msgLinkedDelta:
		d.n.handleChunk(b)
	case msgLeave:
		d.n.handleLeave(b)
	case msgWantFull:
		d.n.handleWantFull(b)
	case msgDigest, msgLinkedDigest:
		d.n.handleDigestChunk(b)
	default:
		d.n.metrics.decodeErrors.Inc()
	}
}

// GetBroadcasts returns queued summary chunks that fit limit, counting own and relayed bytes:
// full summaries and leaves first, then heartbeat deltas, then other deltas, then region digest
// chunks in the room left. A
// delta the broadcast budget held back is queued first once its time has come.
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	d.n.flushHeld()
	var msgs [][]byte
	used := 0
	for _, q := range []*memberlist.TransmitLimitedQueue{d.n.queue, d.n.beatQueue, d.n.deltaQueue, d.n.digestQueue} {
		got := q.GetBroadcasts(overhead, limit-used)
		for _, m := range got {
			used += overhead + len(m)
		}
		msgs = append(msgs, got...)
	}
	for _, m := range msgs {
		c, err := decodeChunk(m)
		d.n.metrics.countBroadcast(err == nil && c.node == d.n.cfg.NodeName, len(m))
	}
	return msgs
}

// LocalState returns every summary and region digest this node holds, for push/pull
// anti-entropy.
func (d *delegate) LocalState(join bool) []byte {
	b, err := encodeStateWith(d.n.store.all(), d.n.digestBlobs())
	if err != nil {
		d.n.log.Error("gossip encode state", "err", err)
		return nil
	}
	return b
}

// MergeRemoteState applies a peer's summaries that are newer than ours.
func (d *delegate) MergeRemoteState(buf []byte, join bool) {
	if len(buf) == 0 {
		return
	}
	held, digests, err := decodeStateWith(buf, stateLimit(d.n.cfg.MaxSummaryBytes))
	if err != nil {
		d.n.metrics.decodeErrors.Inc()
		d.n.log.Debug("gossip bad remote state", "err", err)
		return
	}
	now := d.n.now()
	applied := d.n.mergeDigests(digests, now)
	for _, h := range held {
		s := h.summary
		d.n.metrics.received.WithLabelValues("pushpull").Inc()
		if s.GetSequence() > d.n.futureBound(now) {
			d.n.countRejected(ErrFuture)
			continue
		}
		if s.GetNode() == d.n.cfg.NodeName {
			d.n.seq.advancePast(s.GetSequence())
			continue
		}
		if err := d.n.store.checkHeld(&h, now); err != nil {
			d.n.countRejected(err)
			d.n.log.Debug("gossip summary rejected", "from", s.GetNode(), "path", "pushpull", "err", err)
			continue
		}
		if d.n.store.applyHeld(h, now) {
			d.n.recordApplied(s, "pushpull", now)
			applied = true
		} else {
			d.n.metrics.stale.Inc()
		}
	}
	if applied {
		d.n.subs.notify()
	}
}

// stateLimit bounds a decompressed push/pull state message.
func stateLimit(summaryLimit int) int { return max(16*summaryLimit, 32<<20) }

// NotifyJoin records a member that joined (or came back).
func (d *delegate) NotifyJoin(node *memberlist.Node) { d.n.peers.update(d.n, node, StateAlive) }

// NotifyUpdate records a member whose metadata changed.
func (d *delegate) NotifyUpdate(node *memberlist.Node) { d.n.peers.update(d.n, node, StateAlive) }

// NotifyLeave records a member that left or was declared dead.
// memberlist does not say which (its Node.State is not kept current), so a node's own leave
// message decides: a member that announced its departure is left, any other dead.
func (d *delegate) NotifyLeave(node *memberlist.Node) {
	st := StateDead
	if d.n.peers.announcedLeave(node.Name) {
		st = StateLeft
	}
	d.n.peers.update(d.n, node, st)
}

// AckPayload attaches this node's network coordinate to its ping acks.
func (d *delegate) AckPayload() []byte {
	b, _ := d.n.coords.Coordinate().MarshalBinary()
	return b
}

// NotifyPingComplete refines this node's coordinate from a measured RTT to a peer.
func (d *delegate) NotifyPingComplete(other *memberlist.Node, rtt time.Duration, payload []byte) {
	var c vivaldi.Coordinate
	if err := c.UnmarshalBinary(payload); err != nil {
		return
	}
	d.n.coords.Update(c, rtt)
	d.n.peers.observe(other.Name, c, rtt)
}
