package gossip

import (
	"sort"
	"sync"
	"time"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Summary is the newest capacity summary known from one publishing node, with what this node
// knows about its freshness and distance.
type Summary struct {
	// Summary is the message as published. It is shared: do not modify it.
	Summary *gossipv1.CapacitySummary
	// Node is the publishing node's name; Cluster and Region come from the summary.
	Node, Cluster, Region string
	// ReceivedAt is when this node applied the summary.
	ReceivedAt time.Time
	// Age is now minus the summary's generation time (or its arrival, whichever is earlier).
	Age time.Duration
	// Stale is set when Age exceeds the TTL or the publisher is dead or gone.
	Stale bool
	// State is the publisher's membership state.
	State MemberState
	// RTT estimates the round trip to the publisher (Vivaldi coordinates); RTTKnown is false until
	// the publisher's coordinate has been learned.
	RTT time.Duration
	// RTTKnown reports whether RTT holds an estimate.
	RTTKnown bool
}

// Snapshot returns the newest summary of every known publishing node, sorted by cluster then node.
func (n *Node) Snapshot() []Summary {
	now := n.now()
	self := n.coords.Coordinate()
	entries := n.store.entriesCopy()
	out := make([]Summary, 0, len(entries))
	for node, e := range entries {
		s := Summary{
			Summary: e.summary, Node: node, Cluster: e.summary.GetCluster(), Region: e.summary.GetRegion(),
			ReceivedAt: e.receivedAt, Age: n.age(e, now), State: n.peers.state(node),
		}
		if node == n.cfg.NodeName {
			s.State, s.RTTKnown = StateAlive, true
		} else {
			s.RTT, s.RTTKnown = n.peers.rtt(self, node)
		}
		s.Stale = s.Age > n.cfg.SummaryTTL || n.departed(e)
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Cluster != out[j].Cluster {
			return out[i].Cluster < out[j].Cluster
		}
		return out[i].Node < out[j].Node
	})
	return out
}

// departed reports whether e's publisher counts as gone: memberlist declared it dead or left, and
// the claim may be trusted (departureTrusted).
func (n *Node) departed(e entry) bool {
	return !e.departedAt.IsZero() && n.departureTrusted(e.summary)
}

// age is measured from the earlier of generation and arrival, so a publisher's clock running
// ahead cannot make a summary look younger than it is here.
func (n *Node) age(e entry, now time.Time) time.Duration {
	from := e.receivedAt
	if g := time.Unix(0, e.summary.GetGeneratedAtUnixNano()); e.summary.GetGeneratedAtUnixNano() > 0 && g.Before(from) {
		from = g
	}
	return max(now.Sub(from), 0)
}

// Clusters reduces a snapshot to one summary per cluster: the newest fresh one among the cluster's
// gateway replicas, or the newest stale one when none is fresh.
func Clusters(snap []Summary) map[string]Summary {
	out := map[string]Summary{}
	for _, s := range snap {
		cur, ok := out[s.Cluster]
		if !ok || better(s, cur) {
			out[s.Cluster] = s
		}
	}
	return out
}

func better(a, b Summary) bool {
	if a.Stale != b.Stale {
		return !a.Stale
	}
	return a.Summary.GetGeneratedAtUnixNano() > b.Summary.GetGeneratedAtUnixNano()
}

// Subscribe returns a channel that receives a value (coalesced, never blocking the node) whenever
// summaries or members change or a summary turns stale, and a function that ends the
// subscription.
func (n *Node) Subscribe() (<-chan struct{}, func()) {
	return n.subs.add()
}

// subscribers fans change signals out to Subscribe channels.
type subscribers struct {
	mu   sync.Mutex
	next int
	chs  map[int]chan struct{}
}

func (s *subscribers) add() (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chs == nil {
		s.chs = map[int]chan struct{}{}
	}
	id := s.next
	s.next++
	ch := make(chan struct{}, 1)
	s.chs[id] = ch
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.chs, id)
	}
}

func (s *subscribers) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.chs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// sweep updates staleness, forgets long-departed nodes, and refreshes the gauges.
func (n *Node) sweep() {
	now := n.now()
	forget := now.Add(-n.cfg.ForgetAfter)
	changed := n.store.sweep(now.Add(-n.cfg.SummaryTTL), func(e entry) bool {
		// Departed long ago, or silent for as long (e.g. learned second-hand from a dead publisher).
		return (n.departed(e) && e.departedAt.Before(forget)) || n.age(e, now) > n.cfg.ForgetAfter
	}, func(e entry) bool {
		return n.age(e, now) > n.cfg.SummaryTTL || n.departed(e)
	})
	n.peers.forget(forget)
	if n.digests.forget(forget) {
		changed = true
	}
	if changed {
		n.subs.notify()
	}
	n.updateGauges(now)
}

func (n *Node) updateGauges(now time.Time) {
	counts := map[MemberState]int{}
	for _, m := range n.Members() {
		counts[m.State]++
	}
	for _, st := range []MemberState{StateAlive, StateSuspect, StateDead, StateLeft} {
		n.metrics.members.WithLabelValues(st.String()).Set(float64(counts[st]))
	}
	entries := n.store.entriesCopy()
	ages := make([]ageSample, 0, len(entries))
	for node, e := range entries {
		ages = append(ages, ageSample{node: node, cluster: e.summary.GetCluster(), age: n.age(e, now).Seconds()})
	}
	n.metrics.summaryAge.Reset()
	for _, s := range boundAges(ages) {
		n.metrics.summaryAge.WithLabelValues(s.node, s.cluster).Set(s.age)
	}
}
