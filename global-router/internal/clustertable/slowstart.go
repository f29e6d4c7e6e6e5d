package clustertable

import (
	"net/http"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
)

// Slow start: a cluster that comes back (its ejection ended, or a restarted gateway's summary
// arrived after the cluster went stale) is offered a share of the requests that rises linearly from
// minSlowStartShare to all of them over EjectionConfig.SlowStart. Its traffic returns gradually
// instead of in one burst onto the emptiest cluster.
//
// After an ejection the cluster is first half open: it is offered to one request at a time (at
// most one every probeWait) until one is answered. A cluster behind a partition, whose gossip
// still arrives but whose requests hang until the forwarder's ping gives up on them, then costs
// one delayed request per ejection, not a share of all the traffic.

// minSlowStartShare is the share of requests a cluster is offered as soon as it comes back.
const minSlowStartShare = 0.1

// probeWait is how long a half-open cluster's probe may take before another request is offered
// to it: about the forwarder's default silence-plus-ping-timeout.
const probeWait = 2 * time.Second

// share is the fraction of requests the cluster is offered at now: all of them, unless it came
// back less than slowStart ago.
func (h *health) share(now time.Time, slowStart time.Duration) float64 {
	if slowStart <= 0 || h.back.IsZero() {
		return 1
	}
	since := now.Sub(h.back)
	if since >= slowStart {
		return 1
	}
	return max(minSlowStartShare, float64(since)/float64(slowStart))
}

// halfOpen reports whether the cluster was ejected and has not answered since.
func (h *health) halfOpen() bool { return h.ejects > 0 && !h.proven }

// noteAnswer records that the cluster answered (any status but a server error): a half-open
// cluster is proven, and its slow start begins now.
func (h *health) noteAnswer(o forward.Outcome, now time.Time) {
	if o.Err != nil || o.Status == 0 || (o.Status >= 500 && o.Status != http.StatusServiceUnavailable) {
		return
	}
	if h.halfOpen() {
		h.back = now
	}
	h.proven, h.probeUntil = true, time.Time{}
}

// noteSignal records whether the cluster's summary is stale at now and, when fresh, which gateway
// replica sent it. A fresh summary from another replica after a stale spell is a restarted or
// replaced gateway: its slow start begins now, and it is no longer half open (its summary is as
// good a sign of life as a probe). A summary that was only late (the same replica, fresh again)
// changes nothing.
func (h *health) noteSignal(stale bool, node string, now time.Time) {
	if stale {
		if h.staleSince.IsZero() {
			h.staleSince = now
		}
		return
	}
	if !h.staleSince.IsZero() && h.node != "" && node != h.node {
		h.back, h.proven, h.probeUntil = now, true, time.Time{}
	}
	h.node, h.staleSince = node, time.Time{}
}

// offer decides whether a cluster in slow start, or to be probed, takes part in this view. A
// half-open cluster (after an ejection) and an unverified one (its slow round trip faded, see
// RTTConfig.ProbeBelow) are offered to one request at a time. A view that routes nothing (route
// false) only looks: a due probe turn is not taken, and slow start offers without a draw.
//
// It returns the probe turn it took (zero when none): the request may still go elsewhere, and
// Release then gives the turn back.
func (t *Table) offer(h *health, share float64, unverified, route bool, now time.Time) (bool, time.Time) {
	if h.halfOpen() || unverified {
		if now.Before(h.probeUntil) {
			return false, time.Time{}
		}
		if route {
			h.probeUntil = now.Add(probeWait)
			return true, h.probeUntil
		}
		return true, time.Time{}
	}
	return share >= 1 || !route || t.cfg.Rand() < share, time.Time{}
}

// withhold leaves each cluster in slow start or to be probed out of the view unless offer lets it
// in, and unless no other cluster could take the request: slow start and probes delay a returning
// cluster's traffic, they never leave a request with nowhere to go. A view (route false) reads
// the entries' copies of the health; Claim (route true) the table's own, which offer changes.
func (t *Table) withhold(out []Entry, route bool, now time.Time) {
	var held []int
	open := false
	for i := range out {
		c := &out[i].Cluster
		if !c.Serves || c.Stale || c.Drained || c.Unhealthy || c.ReadyPods <= 0 {
			continue
		}
		if out[i].Share < 1 || out[i].Unverified {
			h := &out[i].health
			if route {
				h = &out[i].state.health
			}
			// A half-open or unverified cluster is probed: offered to one request at a time, on
			// its estimate. Only slow start's offers carry a share (routing.Cluster.Returning).
			probe := h.halfOpen() || out[i].Unverified
			ok, turn := t.offer(h, out[i].Share, out[i].Unverified, route, now)
			if !ok {
				held = append(held, i)
				continue
			}
			out[i].probeTurn = turn
			out[i].Cluster.Returning = !probe
		}
		// A cluster whose every pod is saturated takes nothing: it does not make the held ones
		// unnecessary.
		open = open || c.SaturatedFraction < 1
	}
	if !open {
		return
	}
	for _, i := range held {
		out[i].Cluster.Unhealthy, out[i].Withheld = true, true
	}
}

// Release gives back the probe turns Claim took for view of every cluster but the one at index
// used (-1: none), to which the request is sent: a half-open or unverified cluster offered to a
// request that went elsewhere is offered to the next one, instead of waiting out probeWait
// without a probe and, if it is never the best when its turn comes, never being probed at all.
func (t *Table) Release(view []Entry, used int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range view {
		e := &view[i]
		if i == used || e.probeTurn.IsZero() || e.state == nil {
			continue
		}
		if h := &e.state.health; h.probeUntil.Equal(e.probeTurn) { // not taken again since
			h.probeUntil = time.Time{}
		}
	}
}
