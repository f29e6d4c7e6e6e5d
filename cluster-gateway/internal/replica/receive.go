package replica

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/memberlist"
)

// delegate is the Sharer's memberlist delegate and event handler. memberlist calls it from its
// own goroutines; every method is quick and never blocks.
type delegate struct{ s *Sharer }

// nodeMeta is the metadata a replica announces: its cluster.
type nodeMeta struct {
	Cluster string `json:"c"`
}

// NodeMeta announces the cluster (memberlist.Delegate).
func (d *delegate) NodeMeta(limit int) []byte {
	b, _ := json.Marshal(nodeMeta{Cluster: d.s.cfg.Cluster})
	if len(b) > limit {
		return nil
	}
	return b
}

// NotifyMsg queues a peer's message for the apply loop, copying it (memberlist.Delegate).
func (d *delegate) NotifyMsg(b []byte) {
	if len(b) == 0 {
		return
	}
	select {
	case d.s.inbox <- append([]byte(nil), b...):
	default:
		d.s.metrics.rejected.WithLabelValues(reasonInbox).Inc()
	}
}

// GetBroadcasts has nothing to gossip: messages go straight to each peer (memberlist.Delegate).
func (d *delegate) GetBroadcasts(int, int) [][]byte { return nil }

// LocalState has no state for push/pull (memberlist.Delegate).
func (d *delegate) LocalState(bool) []byte { return nil }

// MergeRemoteState ignores push/pull state (memberlist.Delegate).
func (d *delegate) MergeRemoteState([]byte, bool) {}

// NotifyJoin adds a member of this cluster as a peer (memberlist.EventDelegate).
func (d *delegate) NotifyJoin(n *memberlist.Node) { d.s.memberUp(n) }

// NotifyUpdate re-reads a member's metadata (memberlist.EventDelegate).
func (d *delegate) NotifyUpdate(n *memberlist.Node) { d.s.memberUp(n) }

// NotifyLeave forgets a member that left or died, and its load (memberlist.EventDelegate).
func (d *delegate) NotifyLeave(n *memberlist.Node) { d.s.memberDown(n.Name) }

func (s *Sharer) memberUp(n *memberlist.Node) {
	if n.Name == s.cfg.NodeName {
		return
	}
	var m nodeMeta
	if json.Unmarshal(n.Meta, &m) != nil || m.Cluster != s.cfg.Cluster {
		s.log.Warn("replica pool member of another cluster ignored", "node", n.Name, "cluster", m.Cluster)
		s.memberDown(n.Name)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.members[n.Name] && len(s.members) >= s.cfg.MaxPeers {
		s.log.Warn("replica pool member ignored: too many peers", "node", n.Name, "max", s.cfg.MaxPeers)
		return
	}
	if !s.members[n.Name] {
		s.log.Info("replica peer joined", "node", n.Name, "addr", n.Address())
	}
	s.members[n.Name] = true
	if s.table.peers[n.Name] == nil {
		s.table.peers[n.Name] = &peerState{pods: map[string]podFigures{}}
	}
}

func (s *Sharer) memberDown(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.members[name] {
		s.log.Info("replica peer left", "node", name)
	}
	delete(s.members, name)
	now := s.now()
	for _, addr := range s.table.drop(name) {
		s.table.sum(s.pods, addr, now, s.cfg.MaxAge)
	}
}

// applyLoop applies queued messages until ctx ends.
func (s *Sharer) applyLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case b := <-s.inbox:
			s.apply(b)
		}
	}
}

// apply decodes one message and applies it; a rejected message changes nothing but what it
// carried before the malformed part.
func (s *Sharer) apply(b []byte) {
	h, d, err := decodeHeader(b)
	if err != nil {
		s.reject(reasonMalformed, "", err)
		return
	}
	if h.cluster != s.cfg.Cluster {
		s.reject(reasonCluster, h.sender, nil)
		return
	}
	s.mu.Lock()
	known := s.members[h.sender]
	s.mu.Unlock()
	if !known {
		s.reject(reasonSender, h.sender, nil)
		return
	}
	s.metrics.recvBytes.Add(float64(len(b)))
	if h.kind == kindLoad {
		err = s.applyLoad(h.sender, d)
	} else {
		err = s.applyPrefix(d)
	}
	if err != nil {
		s.reject(reasonMalformed, h.sender, err)
		return
	}
	s.metrics.recvMessages.WithLabelValues(kindName(h.kind)).Inc()
}

func (s *Sharer) reject(reason, sender string, err error) {
	s.metrics.rejected.WithLabelValues(reason).Inc()
	s.log.Debug("replica message rejected", "reason", reason, "sender", sender, "err", err)
}

func (s *Sharer) applyLoad(sender string, d *decoder) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.table.peers[sender] == nil { // left while the message waited
		return nil
	}
	now := s.now()
	s.table.peers[sender].reported = now
	return decodeLoad(d, func(e loadEntry) {
		if !s.table.apply(s.pods, sender, e, now) {
			s.metrics.ignored.Inc()
			return
		}
		s.table.sum(s.pods, e.addr, now, s.cfg.MaxAge)
	})
}

func (s *Sharer) applyPrefix(d *decoder) error {
	s.subMu.RLock()
	defer s.subMu.RUnlock()
	return decodePrefix(d, func(r prefixRoute) {
		ep := s.pods.Get(r.addr)
		if ep == nil || !servesBase(ep.Models(), r.model) {
			s.metrics.ignored.Inc()
			return
		}
		for _, f := range s.onPeer {
			f(ep, r.hashes)
		}
		for _, f := range s.onSeen {
			f(r.model, r.hashes)
		}
	})
}
