package gossip

import (
	"errors"
	"fmt"
	"time"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// SummaryVerifier decides whether a capacity summary received from the pool may be stored (a
// router checks the cluster's registration and signature). A rejected summary is dropped before
// it can replace the node's previous one, is not relayed, and is counted in
// switchyard_gossip_summaries_rejected_total{reason="verifier"}; the verifier does its own
// logging and counting by reason. The node calls it for every complete summary (received whole,
// rebuilt from a delta, or merged from push/pull) with its summary store locked, from
// memberlist's goroutines: it must be safe for concurrent use, must not block, and must not call
// back into the node.
type SummaryVerifier interface {
	VerifySummary(s *gossipv1.CapacitySummary) error
}

// SummaryAuthenticator is an optional interface of a SummaryVerifier. Authenticated reports
// whether s, a summary the verifier accepted, was verified against its publisher's registered key
// rather than accepted unchecked (a router's compatibility mode). Departure claims are not
// authenticated (memberlist's dead and left messages, and this package's leave message, can come
// from any holder of the gossip key), so the node never lets one make an authenticated summary
// stale or forgotten: such a summary ages out by SummaryTTL once its publisher stops publishing.
// The concurrency contract is VerifySummary's.
type SummaryAuthenticator interface {
	Authenticated(s *gossipv1.CapacitySummary) bool
}

// Why a node refuses a summary (the reason label of switchyard_gossip_summaries_rejected_total).
const (
	// RejectClockSkew: the summary's sequence number or generation time is further in the future
	// than Config.MaxClockSkew.
	RejectClockSkew = "clock_skew"
	// RejectVerifier: Config.Verifier refused the summary.
	RejectVerifier = "verifier"
	// RejectDeparture: a departure claim (a leave message, or memberlist declaring the publisher
	// dead or left) about a publisher whose summary is authenticated (SummaryAuthenticator): not
	// trusted, the summary ages out instead.
	RejectDeparture = "departure"
	// RejectForgedChunk: a linked chunk whose digest is not the one its message names (the head,
	// or the previous chunk's link): made up by a node other than the publisher, or corrupted.
	RejectForgedChunk = "forged_chunk"
)

// Errors of summary acceptance.
var (
	// ErrFuture reports a summary or chunk from further in the future than the clock skew allows.
	ErrFuture = errors.New("gossip: summary from the future")
	// ErrRejected reports a summary the verifier refused; it wraps the verifier's error.
	ErrRejected = errors.New("gossip: summary rejected")
)

// futureBound is the largest sequence number or generation time (Unix nanoseconds) accepted at
// now. Sequences are the publisher's clock in nanoseconds (see sequencer), so a sequence above
// this bound is forged or from a clock far ahead: accepting it would make every later summary of
// that node look stale until real time caught up (newest sequence wins).
func (n *Node) futureBound(now time.Time) uint64 {
	return uint64(now.Add(n.cfg.MaxClockSkew).UnixNano())
}

// accept is the store's check of every received summary: its sequence and generation time are
// not too far in the future, and the verifier, if any, accepts it.
func (n *Node) accept(s *gossipv1.CapacitySummary, now time.Time) error {
	bound := n.futureBound(now)
	if s.GetSequence() > bound || (s.GetGeneratedAtUnixNano() > 0 && uint64(s.GetGeneratedAtUnixNano()) > bound) {
		return fmt.Errorf("%w: node %s sequence %d generated at %d, now %d (skew allowed %v)", ErrFuture,
			s.GetNode(), s.GetSequence(), s.GetGeneratedAtUnixNano(), now.UnixNano(), n.cfg.MaxClockSkew)
	}
	if n.cfg.Verifier != nil {
		if err := n.cfg.Verifier.VerifySummary(s); err != nil {
			return fmt.Errorf("%w: node %s: %w", ErrRejected, s.GetNode(), err)
		}
	}
	return nil
}

// departureTrusted reports whether a departure claim about the publisher of s may make s stale:
// unless the verifier authenticated s.
func (n *Node) departureTrusted(s *gossipv1.CapacitySummary) bool {
	a, ok := n.cfg.Verifier.(SummaryAuthenticator)
	return !ok || !a.Authenticated(s)
}

// countRejected counts a refused summary or chunk by its error.
func (n *Node) countRejected(err error) {
	reason := RejectVerifier
	if errors.Is(err, ErrFuture) {
		reason = RejectClockSkew
	}
	n.metrics.rejected.WithLabelValues(reason).Inc()
}

// Revalidate runs the acceptance checks again on every summary the node holds and forgets the
// publishers whose summary now fails them, e.g. after the verifier's registrations changed (a
// cluster revoked, or the first cluster registered). It returns the forgotten node names.
func (n *Node) Revalidate() []string {
	dropped := n.store.recheck(n.now())
	for range dropped {
		n.metrics.rejected.WithLabelValues(RejectVerifier).Inc()
	}
	if len(dropped) > 0 {
		n.subs.notify()
	}
	return dropped
}
