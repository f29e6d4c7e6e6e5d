package gossip

import (
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/switchyard-dev/switchyard/gossip/vivaldi"
)

// MemberState is a member's liveness as the failure detector sees it.
type MemberState int

// Member states.
const (
	// StateUnknown: a summary arrived from a node not (yet) seen as a member.
	StateUnknown MemberState = iota
	// StateAlive: the member answers probes.
	StateAlive
	// StateSuspect: the member missed probes and may be declared dead.
	StateSuspect
	// StateDead: the member was declared dead.
	StateDead
	// StateLeft: the member left the pool gracefully.
	StateLeft
)

// String returns "alive", "suspect", "dead", "left" or "unknown".
func (s MemberState) String() string {
	switch s {
	case StateAlive:
		return "alive"
	case StateSuspect:
		return "suspect"
	case StateDead:
		return "dead"
	case StateLeft:
		return "left"
	}
	return "unknown"
}

// Member is one node of the pool.
type Member struct {
	// Name is the node name.
	Name string
	// Addr is the node's gossip address, "host:port".
	Addr string
	// State is the node's liveness.
	State MemberState
	// Meta is the node's decoded metadata; zero when MetaErr is set.
	Meta Metadata
	// MetaErr is set when the node's metadata failed validation.
	MetaErr error
	// Since is when the state last changed, on this node's clock.
	Since time.Time
}

// memberRecord is a member as the event callbacks last reported it.
type memberRecord struct {
	Member
	features features // advertised in its metadata
}

// peers tracks members and their network coordinates. Safe for concurrent use; its methods never
// call into memberlist, so the event callbacks may use them with memberlist's lock held.
type peers struct {
	mu       sync.Mutex
	members  map[string]*memberRecord
	coords   map[string]vivaldi.Coordinate
	rtts     map[string]time.Duration
	leaves   map[string]uint64 // announced departures: node → sequence of its leave message
	alive    int
	gateways int // alive members whose role is gateway: the publishers
	legacy   int // alive members that do not read the deltas this version writes (deltaFeatures)
	unsigned int // alive members that do not read signed deltas (featureSignedDeltas)
	unlinked int // alive members that do not read linked chunks (featureLinkedChunks)
}

// recordLeave notes node's leave announcement with sequence seq and reports whether it was new.
// A member already declared dead becomes left.
func (p *peers) recordLeave(node string, seq uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leaves == nil {
		p.leaves = map[string]uint64{}
	}
	if old, ok := p.leaves[node]; ok && old >= seq {
		return false
	}
	p.leaves[node] = seq
	if r := p.members[node]; r != nil && r.State == StateDead {
		r.State = StateLeft
	}
	return true
}

// announcedLeave reports whether node announced its departure.
func (p *peers) announcedLeave(node string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.leaves[node]
	return ok
}

// update records a membership event for node.
func (p *peers) update(n *Node, node *memberlist.Node, st MemberState) {
	meta, feats, err := decodeMetadata(node.Meta)
	if err != nil {
		n.metrics.invalidMeta.Inc()
		n.log.Warn("gossip member metadata rejected", "member", node.Name, "err", err)
	}
	now := n.now()
	p.mu.Lock()
	rec := p.members[node.Name]
	if rec == nil {
		rec = &memberRecord{}
		p.members[node.Name] = rec
	}
	if rec.State != st {
		rec.Since = now
	}
	if st == StateAlive {
		delete(p.leaves, node.Name) // back in the pool: a new incarnation
	}
	rec.Member = Member{Name: node.Name, Addr: net.JoinHostPort(node.Addr.String(), strconv.Itoa(int(node.Port))),
		State: st, Meta: meta, MetaErr: err, Since: rec.Since}
	rec.features = feats
	p.alive, p.gateways, p.legacy, p.unsigned, p.unlinked = 0, 0, 0, 0, 0
	for _, r := range p.members {
		if r.State == StateAlive {
			p.alive++
			if r.Meta.Role == RoleGateway {
				p.gateways++
			}
			if r.features&deltaFeatures != deltaFeatures {
				p.legacy++
			}
			if r.features&featureSignedDeltas == 0 {
				p.unsigned++
			}
			if r.features&featureLinkedChunks == 0 {
				p.unlinked++
			}
		}
	}
	p.mu.Unlock()
	if st == StateAlive {
		n.store.markDeparted(node.Name, time.Time{})
	} else {
		n.store.markDeparted(node.Name, now)
		if held := n.store.summaryOf(node.Name); held != nil && !n.departureTrusted(held) {
			n.metrics.rejected.WithLabelValues(RejectDeparture).Inc()
			n.log.Info("gossip member departure not trusted for an authenticated publisher; its summary ages out instead",
				"member", node.Name, "state", st.String(), "cluster", held.GetCluster())
		}
	}
	n.subs.notify()
}

// beatPoolSize is the pool size the heartbeat queue sizes its retransmits by: the real one, but
// at least 99. Memberlist sends a broadcast RetransmitMult·⌈log10(N+1)⌉ times per node, which in a
// pool of under 10 nodes is RetransmitMult times: with 3, about one receiver in twenty misses a
// given message, and a receiver that misses a heartbeat sees the summary age by one more
// heartbeat interval. At 99 or more the count is at least 2·RetransmitMult (a miss in about 400).
func (p *peers) beatPoolSize() int { return max(p.aliveCount(), 99) }

// aliveCount is the broadcast queue's estimate of the pool size (at least 1: this node).
func (p *peers) aliveCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(p.alive, 1)
}

// gatewayCount is the number of alive gateways, the publishers that share the broadcast budget
// (at least 1: this node, which publishes).
func (p *peers) gatewayCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(p.gateways, 1)
}

// allReadOwnDeltas reports whether every alive member advertises deltaFeatures (a member whose
// metadata does not decode counts as one that does not).
func (p *peers) allReadOwnDeltas() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.legacy == 0
}

// allReadSignedDeltas reports whether every alive member advertises featureSignedDeltas.
func (p *peers) allReadSignedDeltas() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unsigned == 0
}

// allReadLinkedChunks reports whether every alive member advertises featureLinkedChunks.
func (p *peers) allReadLinkedChunks() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unlinked == 0
}

// observe records a peer's coordinate and a measured RTT to it.
func (p *peers) observe(name string, c vivaldi.Coordinate, rtt time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.coords[name] = c
	if p.rtts == nil {
		p.rtts = map[string]time.Duration{}
	}
	if old, ok := p.rtts[name]; ok {
		rtt = (old*7 + rtt) / 8
	}
	p.rtts[name] = rtt
}

// rtt estimates the round-trip time to name: the Vivaldi distance when the peer's coordinate is
// known, else the smoothed measured RTT.
func (p *peers) rtt(self vivaldi.Coordinate, name string) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.coords[name]; ok {
		return self.DistanceTo(c), true
	}
	d, ok := p.rtts[name]
	return d, ok
}

// state returns the recorded state of name.
func (p *peers) state(name string) MemberState {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.members[name]; r != nil {
		return r.State
	}
	return StateUnknown
}

// forget drops members departed before cutoff.
func (p *peers) forget(cutoff time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, r := range p.members {
		if (r.State == StateDead || r.State == StateLeft) && r.Since.Before(cutoff) {
			delete(p.members, name)
			delete(p.coords, name)
			delete(p.rtts, name)
			delete(p.leaves, name)
		}
	}
}

// Members returns every known member, including this node and dead or departed members not yet
// forgotten, sorted by name. Suspect states come from memberlist's current view.
func (n *Node) Members() []Member {
	suspect := map[string]bool{}
	if ml := n.memberlist(); ml != nil {
		for _, m := range ml.Members() {
			if m.State == memberlist.StateSuspect {
				suspect[m.Name] = true
			}
		}
	}
	n.peers.mu.Lock()
	out := make([]Member, 0, len(n.peers.members))
	for _, r := range n.peers.members {
		m := r.Member
		if m.State == StateAlive && suspect[m.Name] {
			m.State = StateSuspect
		}
		out = append(out, m)
	}
	n.peers.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
