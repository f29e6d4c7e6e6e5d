package replica

import (
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Pods is the endpoint store the Sharer reads its own load from and writes the peers' into
// (datastore.Store). It must be safe for concurrent use.
type Pods interface {
	Endpoints() []*datastore.Endpoint
	Get(addr string) *datastore.Endpoint
}

// podFigures is one peer's last report for one pod.
type podFigures struct {
	load framework.InFlightLoad
	at   time.Time
}

// peerState is what one peer last reported.
type peerState struct {
	pods     map[string]podFigures // pod address -> figures
	reported time.Time             // the newest report
}

// loadEntryBytes estimates the memory one kept pod figure takes (map entry, key, figures).
const loadEntryBytes = 96

// peerTable holds every peer's reports. Callers hold the Sharer's mutex.
type peerTable struct {
	peers map[string]*peerState
}

// apply stores a report entry from peer at now and returns whether it was kept: entries for pods
// this replica does not know are ignored, which bounds a peer's table by the store's size.
func (t *peerTable) apply(pods Pods, peer string, e loadEntry, now time.Time) bool {
	if pods.Get(e.addr) == nil {
		return false
	}
	p := t.peers[peer]
	p.pods[e.addr] = podFigures{load: e.load, at: now}
	p.reported = now
	return true
}

// sum stores on the pod at addr the sum of the fresh peer figures (younger than maxAge at now).
func (t *peerTable) sum(pods Pods, addr string, now time.Time, maxAge time.Duration) {
	ep := pods.Get(addr)
	if ep == nil {
		return
	}
	var sum framework.InFlightLoad
	for _, p := range t.peers {
		if f, ok := p.pods[addr]; ok && now.Sub(f.at) <= maxAge {
			sum.Requests += f.load.Requests
			sum.Prefilling += f.load.Prefilling
			sum.PrefillTokens += f.load.PrefillTokens
		}
	}
	ep.SetPeerInFlight(sum)
}

// expire forgets the figures older than maxAge at now and of pods no longer in the store, and
// returns the pod addresses whose sums changed.
func (t *peerTable) expire(pods Pods, now time.Time, maxAge time.Duration) map[string]struct{} {
	changed := map[string]struct{}{}
	for _, p := range t.peers {
		for addr, f := range p.pods {
			if now.Sub(f.at) > maxAge || pods.Get(addr) == nil {
				delete(p.pods, addr)
				changed[addr] = struct{}{}
			}
		}
	}
	return changed
}

// drop forgets peer and returns the pods it had figures for.
func (t *peerTable) drop(peer string) []string {
	p := t.peers[peer]
	if p == nil {
		return nil
	}
	delete(t.peers, peer)
	addrs := make([]string, 0, len(p.pods))
	for addr := range p.pods {
		addrs = append(addrs, addr)
	}
	return addrs
}

// bytes estimates the table's memory.
func (t *peerTable) bytes() int {
	n := 0
	for _, p := range t.peers {
		n += len(p.pods) * loadEntryBytes
	}
	return n
}

// oldest is the age at now of the stalest peer's newest report (0 with no peer).
func (t *peerTable) oldest(now time.Time) time.Duration {
	var age time.Duration
	for _, p := range t.peers {
		if !p.reported.IsZero() {
			age = max(age, now.Sub(p.reported))
		}
	}
	return age
}

// zeroRepeats is how many reports a pod's count keeps being sent after it dropped to zero, so
// that a lost packet does not leave peers counting requests that ended until MaxAge.
const zeroRepeats = 3

// ownLoad builds this replica's load report: every pod with requests in flight, and pods that
// dropped to zero in the last zeroRepeats reports. zeros tracks the latter across calls.
func ownLoad(pods Pods, zeros map[string]int, out []loadEntry) []loadEntry {
	for _, ep := range pods.Endpoints() {
		l := ep.OwnInFlight()
		switch {
		case l.Requests > 0:
			zeros[ep.Address] = zeroRepeats
		case zeros[ep.Address] > 0:
			zeros[ep.Address]--
			l = framework.InFlightLoad{}
			if zeros[ep.Address] == 0 {
				delete(zeros, ep.Address)
			}
		default:
			continue
		}
		out = append(out, loadEntry{addr: ep.Address, load: l})
	}
	for addr := range zeros {
		if pods.Get(addr) == nil {
			delete(zeros, addr)
		}
	}
	return out
}

// servesBase reports whether m's base model is model (a route names the base model it ran on).
func servesBase(m *datastore.Models, model string) bool {
	return m != nil && m.Base == model
}
