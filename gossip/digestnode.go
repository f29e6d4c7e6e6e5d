package gossip

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/memberlist"
	"google.golang.org/protobuf/proto"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// DigestVerifier decides whether a region digest received from the pool may be stored and
// relayed (a router checks the region's registered signing key). A rejected digest is dropped,
// not relayed, and counted in switchyard_gossip_digests_total{event="rejected"}; the verifier
// does its own logging and counting by reason. The node calls it for every complete digest
// message (full or delta, by broadcast, push/pull or RelayDigest) with its digest store locked,
// from memberlist's goroutines: it must be safe for concurrent use, must not block, and must not
// call back into the node.
type DigestVerifier interface {
	VerifyDigest(d *gossipv1.RegionDigest) error
}

// ErrDigestRejected reports a digest the digest verifier refused; it wraps the verifier's error.
var ErrDigestRejected = errors.New("gossip: digest rejected")

// Digest is the newest digest state known from one aggregator, with its freshness.
type Digest struct {
	// Digest is the state: the aggregator's full digest with its newest delta applied (a
	// full-digest header with the delta's sequence and generation time; no signature). It is
	// shared: do not modify it.
	Digest *gossipv1.RegionDigest
	// Origin is the aggregator's node name, Region the region it describes.
	Origin, Region string
	// ReceivedAt is when this node applied the newest message of the state.
	ReceivedAt time.Time
	// Age is now minus the state's generation time (or its arrival, whichever is earlier).
	Age time.Duration
	// Stale is set when Age exceeds Config.DigestTTL.
	Stale bool
	// Full and Delta are the signed messages the state was built from, encoded as they travel
	// (Delta nil when the state is the full digest): what RelayDigest takes.
	Full, Delta []byte
}

// Digests returns the newest digest state of every aggregator known, ordered by origin.
func (n *Node) Digests() []Digest {
	now := n.now()
	held := n.digests.all()
	out := make([]Digest, 0, len(held))
	for _, h := range held {
		d := Digest{Digest: h.current, Origin: h.current.GetOrigin(), Region: h.current.GetRegion(),
			ReceivedAt: h.receivedAt, Full: h.fullBlob, Delta: h.deltaBlob}
		d.Age = digestAge(h.current, h.receivedAt, now)
		d.Stale = d.Age > n.cfg.DigestTTL
		out = append(out, d)
	}
	return out
}

// digestAge is now minus the earlier of the digest's generation and its arrival.
func digestAge(d *gossipv1.RegionDigest, receivedAt, now time.Time) time.Duration {
	from := receivedAt
	if g := d.GetGeneratedAtUnixNano(); g > 0 && time.Unix(0, g).Before(from) {
		from = time.Unix(0, g)
	}
	return max(now.Sub(from), 0)
}

// PublishDigest spreads a region digest that this node, an aggregator, made. The node copies d,
// fills in the schema version, its node name as origin, a fresh sequence and the generation
// time, signs it with key (nil: unsigned), stores it and queues it for broadcast (cut into
// linked chunks when it exceeds a packet). For a delta, d.BaseSequence must be the sequence of a
// full digest this node published. It returns the copy that was published.
func (n *Node) PublishDigest(d *gossipv1.RegionDigest, key ed25519.PrivateKey) (*gossipv1.RegionDigest, error) {
	if d == nil {
		return nil, errors.New("gossip: publish digest: nil digest")
	}
	out := proto.CloneOf(d)
	now := n.now()
	out.SchemaVersion, out.Origin = DigestSchemaVersion, n.cfg.NodeName
	out.Sequence = n.seq.next(uint64(now.UnixNano()))
	out.GeneratedAtUnixNano = now.UnixNano()
	out.Signature, out.SigningKeyId = nil, ""
	if key != nil {
		if err := SignDigest(out, key); err != nil {
			return nil, fmt.Errorf("gossip: publish digest: %w", err)
		}
	}
	if err := checkDigest(out); err != nil {
		return nil, fmt.Errorf("gossip: publish digest: %w", err)
	}
	blob, err := EncodeDigest(out)
	if err != nil {
		return nil, fmt.Errorf("gossip: publish digest: %w", err)
	}
	if len(blob) > n.cfg.MaxDigestBytes {
		n.metrics.digests.WithLabelValues("too_large").Inc()
		return nil, fmt.Errorf("gossip: publish digest: %d bytes, limit %d (MaxDigestBytes)", len(blob),
			n.cfg.MaxDigestBytes)
	}
	if err := n.queueDigest(out, blob); err != nil {
		return nil, err
	}
	n.digests.add(out, blob, now)
	n.metrics.digests.WithLabelValues("published").Inc()
	n.metrics.digestBytes.WithLabelValues(digestKind(out)).Observe(float64(len(blob)))
	n.subs.notify()
	return out, nil
}

// RelayDigest takes a digest message another node made (an encoded RegionDigest, as Digest.Full
// and Digest.Delta hold it, e.g. from the pool of aggregators), checks it as if it had arrived
// (well formed, not from the future, accepted by the digest verifier), stores it and queues it
// for broadcast in this node's pool. A message already held, or older, is neither stored nor
// queued again. It reports whether the message was new.
func (n *Node) RelayDigest(blob []byte) (bool, error) {
	d, err := DecodeDigest(blob, n.cfg.MaxDigestBytes)
	if err != nil {
		return false, fmt.Errorf("gossip: relay digest: %w", err)
	}
	now := n.now()
	if err := n.acceptDigest(d, now); err != nil {
		n.countDigestRejected(err)
		return false, fmt.Errorf("gossip: relay digest: %w", err)
	}
	switch n.digests.add(d, blob, now) {
	case chunkApplied, chunkParked:
	default:
		return false, nil
	}
	if err := n.queueDigest(d, blob); err != nil {
		return false, err
	}
	n.metrics.digests.WithLabelValues("relayed").Inc()
	n.subs.notify()
	return true, nil
}

// queueDigest cuts a digest message into chunks and queues them for broadcast.
func (n *Node) queueDigest(d *gossipv1.RegionDigest, blob []byte) error {
	msgs, err := encodeParts(msgDigest, d.GetOrigin(), d.GetSequence(), blob,
		n.cfg.Timings.UDPBufferSize-packetReserve, true)
	if err != nil {
		return fmt.Errorf("gossip: digest: %w", err)
	}
	for i, m := range msgs {
		n.digestQueue.QueueBroadcast(&digestBroadcast{origin: d.GetOrigin(), seq: d.GetSequence(), index: i,
			msg: m, full: d.GetBaseSequence() == 0, supersedes: true})
	}
	return nil
}

// handleDigestChunk applies a received digest chunk and relays it when it was new to this node.
func (n *Node) handleDigestChunk(b []byte) {
	c, err := decodeChunk(b)
	if err != nil {
		n.metrics.decodeErrors.Inc()
		return
	}
	n.metrics.digests.WithLabelValues("chunk_received").Inc()
	now := n.now()
	if c.seq > n.futureBound(now) {
		n.countDigestRejected(ErrFuture)
		return
	}
	if c.node == n.cfg.NodeName {
		n.seq.advancePast(c.seq)
		return
	}
	out, d, err := n.digests.addChunk(c, now)
	switch {
	case out == chunkForged:
		n.metrics.digests.WithLabelValues("forged_chunk").Inc()
		return
	case out == chunkRejected:
		n.countDigestRejected(err)
		n.log.Debug("gossip digest rejected", "origin", c.node, "sequence", c.seq, "err", err)
		return
	case err != nil:
		n.metrics.decodeErrors.Inc()
		n.log.Debug("gossip bad digest", "origin", c.node, "err", err)
		return
	case out == chunkStale || out == chunkDuplicate:
		return
	case out == chunkApplied:
		n.metrics.digests.WithLabelValues("applied").Inc()
		n.subs.notify()
	case out == chunkParked:
		n.metrics.digests.WithLabelValues("parked").Inc()
	}
	n.digestQueue.QueueBroadcast(&digestBroadcast{origin: c.node, seq: c.seq, index: c.index,
		msg: append([]byte(nil), b...), full: d != nil && d.GetBaseSequence() == 0, supersedes: d != nil})
}

// acceptDigest is the check of every digest received: its sequence and generation time are not
// too far in the future, and the digest verifier, if any, accepts it.
func (n *Node) acceptDigest(d *gossipv1.RegionDigest, now time.Time) error {
	bound := n.futureBound(now)
	if d.GetSequence() > bound || (d.GetGeneratedAtUnixNano() > 0 && uint64(d.GetGeneratedAtUnixNano()) > bound) {
		return fmt.Errorf("%w: digest of %s sequence %d", ErrFuture, d.GetOrigin(), d.GetSequence())
	}
	if n.cfg.DigestVerifier != nil {
		if err := n.cfg.DigestVerifier.VerifyDigest(d); err != nil {
			return fmt.Errorf("%w: origin %s: %w", ErrDigestRejected, d.GetOrigin(), err)
		}
	}
	return nil
}

// countDigestRejected counts a refused digest by its error.
func (n *Node) countDigestRejected(err error) {
	event := "rejected"
	if errors.Is(err, ErrFuture) {
		event = "clock_skew"
	}
	n.metrics.digests.WithLabelValues(event).Inc()
}

// RevalidateDigests runs the acceptance checks again on every digest the node holds and forgets
// the aggregators whose digest now fails them (after the region keys changed). It returns the
// forgotten aggregators' names.
func (n *Node) RevalidateDigests() []string {
	dropped := n.digests.recheck(n.now())
	for range dropped {
		n.metrics.digests.WithLabelValues("rejected").Inc()
	}
	if len(dropped) > 0 {
		n.subs.notify()
	}
	return dropped
}

// mergeDigests applies the digest messages of a peer's push/pull state.
func (n *Node) mergeDigests(blobs [][]byte, now time.Time) bool {
	applied := false
	for _, blob := range blobs {
		d, err := DecodeDigest(blob, n.cfg.MaxDigestBytes)
		if err != nil {
			n.metrics.decodeErrors.Inc()
			continue
		}
		if d.GetOrigin() == n.cfg.NodeName {
			n.seq.advancePast(d.GetSequence())
			continue
		}
		if err := n.acceptDigest(d, now); err != nil {
			n.countDigestRejected(err)
			continue
		}
		if n.digests.add(d, blob, now) == chunkApplied {
			n.metrics.digests.WithLabelValues("applied").Inc()
			applied = true
		}
	}
	return applied
}

// digestBlobs returns the messages of every digest state held, for push/pull: each full digest
// followed by its delta.
func (n *Node) digestBlobs() [][]byte {
	var out [][]byte
	for _, h := range n.digests.all() {
		if h.fullBlob != nil {
			out = append(out, h.fullBlob)
		}
		if h.deltaBlob != nil {
			out = append(out, h.deltaBlob)
		}
	}
	return out
}

// digestKind is the kind label of a digest message: full or delta.
func digestKind(d *gossipv1.RegionDigest) string {
	if d.GetBaseSequence() == 0 {
		return "full"
	}
	return "delta"
}

// digestBroadcast is one digest chunk in the broadcast queue, own or relayed.
type digestBroadcast struct {
	origin string
	seq    uint64
	index  int
	msg    []byte
	// full is set on chunks of a full digest. A delta never replaces a full digest's chunks:
	// receivers need the full digest to apply it.
	full bool
	// supersedes is set on chunks of a complete digest this node checked: only those replace
	// queued chunks (a piece of an incomplete message may be forged).
	supersedes bool
}

// Invalidates reports whether b replaces other in the queue: when b supersedes, the chunk of the
// same index of the same message, and chunks of older messages of the same origin (older full
// digests only when b is a full digest).
func (b *digestBroadcast) Invalidates(other memberlist.Broadcast) bool {
	o, ok := other.(*digestBroadcast)
	if !ok || o.origin != b.origin || !b.supersedes {
		return false
	}
	if o.seq == b.seq {
		return o.index == b.index
	}
	return o.seq < b.seq && (b.full || !o.full)
}

// Message returns the encoded chunk.
func (b *digestBroadcast) Message() []byte { return b.msg }

// Finished is called when the chunk leaves the queue; nothing waits for it.
func (b *digestBroadcast) Finished() {}

var _ memberlist.Broadcast = (*digestBroadcast)(nil)
