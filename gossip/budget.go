package gossip

import (
	"math"
	"time"

	"github.com/hashicorp/memberlist"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Broadcast budget. Every node relays every publisher's summaries, so the bytes a node sends per
// second are the sum, over publishers, of publications per second × sends per node × bytes per
// message: they grow with the number of publishers, not with anything a node controls on its own.
// Config.BroadcastBudget bounds that sum. Each gateway takes an equal share of it (the budget
// divided by the alive gateways, which every node knows from the members' metadata), takes off
// what its periodic full summaries cost (amortised over FullSummaryInterval), and paces its deltas
// to the rest with a token bucket: a delta costs its messages' bytes times the sends per node of
// its queue. A delta published while the bucket is in debt is held back; once the debt is paid
// the next publication goes out in its place, or, when the caller has fallen quiet, the held one
// itself (holdUntil). Every delta is against the full summary, so the newest one carries every
// change held back. Full summaries are never held; heartbeats are paced like other deltas.

// maxHold bounds how long after the previous delta a held one waits, however many publishers
// share the budget: beyond that the budget is exceeded rather than summaries aged. It is below
// heartbeatGap so that a paced series of deltas is never taken for heartbeats.
const maxHold = heartbeatGap / 2

// budgetBurst is how long an idle publisher saves up its share: after a quiet spell it sends
// about this long's worth of deltas at the caller's pace before pacing sets in.
const budgetBurst = time.Second

// messageOverhead is what memberlist adds per broadcast message in a packet (a 2-byte length in
// the compound message and the user-message type byte).
const messageOverhead = 3

// heldDelta is a delta held back by the budget: the summary it rebuilds and its encoded blob.
type heldDelta struct {
	summary *gossipv1.CapacitySummary
	blob    []byte
}

// pacer is a token bucket of bytes sent per node. The zero value is full.
type pacer struct {
	tokens float64   // bytes that may be sent at once; negative: a debt to pay before the next delta
	at     time.Time // when tokens was brought up to date; zero: never
	nextAt time.Time // the earliest time the next delta may be sent
}

// spend charges cost bytes sent at now to the bucket, which fills at rate bytes per second (+Inf:
// no budget; 0 or less: nothing left for deltas), and sets when the next delta may go.
func (p *pacer) spend(now time.Time, cost, rate float64) {
	switch {
	case math.IsInf(rate, 1):
		p.nextAt = time.Time{}
		return
	case rate <= 0:
		p.tokens, p.at, p.nextAt = 0, now, now.Add(maxHold)
		return
	}
	limit := rate * budgetBurst.Seconds()
	if p.at.IsZero() {
		p.tokens = limit
	} else {
		p.tokens = min(limit, p.tokens+rate*now.Sub(p.at).Seconds())
	}
	p.at = now
	p.tokens = max(p.tokens-cost, -rate*maxHold.Seconds())
	p.nextAt = now
	if p.tokens < 0 {
		p.nextAt = now.Add(time.Duration(-p.tokens / rate * float64(time.Second)))
	}
}

// deltaRate returns the bytes per second, per node, this publisher's deltas may use: its share of
// the budget less what its full summaries cost. +Inf when there is no budget.
func (n *Node) deltaRate() float64 {
	if n.cfg.BroadcastBudget == 0 {
		return math.Inf(1)
	}
	share := float64(n.cfg.BroadcastBudget) / float64(n.peers.gatewayCount())
	fulls := float64(n.pub.baseMsgs*n.sendsPerNode(n.queue)) / n.cfg.FullSummaryInterval.Seconds()
	return share - fulls
}

// sendsPerNode is how many times every node sends a message of queue q, as memberlist counts
// it: RetransmitMult·⌈log10(N+1)⌉.
func (n *Node) sendsPerNode(q *memberlist.TransmitLimitedQueue) int {
	return q.RetransmitMult * int(math.Ceil(math.Log10(float64(q.NumNodes()+1))))
}

// messageBytes is what msgs cost in packets: their bytes and memberlist's framing of each.
func messageBytes(msgs [][]byte) int {
	total := 0
	for _, m := range msgs {
		total += len(m) + messageOverhead
	}
	return total
}

// sendOrHold sends the delta d now, or holds it back until the budget allows (replacing a delta
// held before). The node's own store takes d's summary at once either way. Called with n.pub.mu
// held.
func (n *Node) sendOrHold(d *heldDelta, now time.Time) {
	n.store.applyHeld(heldSummary{summary: d.summary, base: n.pub.base}, now)
	if now.Before(n.pub.pace.nextAt) {
		n.dropHeld()
		n.pub.held = d
		n.pub.heldUntil.Store(n.holdUntil(now).UnixNano())
		n.metrics.deltas.WithLabelValues("held").Inc()
		return
	}
	n.dropHeld()
	n.sendDelta(d, now)
}

// holdUntil returns when a delta held back at now is sent if no newer publication replaces it:
// once the budget allows, or, when the caller publishes at a steady pace of less than maxHold,
// a quarter of that pace after its next publication is due. The next publication then goes out
// in its place, fresh, as soon as the budget allows; the held one only goes when the caller has
// fallen quiet. Called with n.pub.mu held.
func (n *Node) holdUntil(now time.Time) time.Time {
	until := n.pub.pace.nextAt
	if c := n.pub.cadence; c > 0 && c < maxHold {
		if next := now.Add(c + c/4); next.After(until) {
			until = next
		}
	}
	return until
}

// dropHeld forgets the held delta, which a newer publication supersedes. Called with n.pub.mu
// held.
func (n *Node) dropHeld() {
	if n.pub.held == nil {
		return
	}
	n.pub.held = nil
	n.pub.heldUntil.Store(0)
	n.metrics.deltas.WithLabelValues("superseded").Inc()
}

// flushHeld sends the held delta once its time (holdUntil) has come. The delegate calls it before
// every gossip packet, so a held delta goes out in the first gossip round after its time.
func (n *Node) flushHeld() {
	until := n.pub.heldUntil.Load()
	if until == 0 || n.now().UnixNano() < until {
		return
	}
	n.pub.mu.Lock()
	defer n.pub.mu.Unlock()
	now := n.now()
	d := n.pub.held
	if d == nil || now.UnixNano() < n.pub.heldUntil.Load() {
		return
	}
	n.pub.held = nil
	n.pub.heldUntil.Store(0)
	n.sendDelta(d, now)
}
