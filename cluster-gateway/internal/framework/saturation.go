package framework

import (
	"errors"
	"fmt"
	"time"
)

// Saturation is the gateway's one definition of a saturated endpoint. An endpoint is saturated
// at an instant when it is ejected by passive health, its metrics are stale or its last scrape
// failed, its KV-cache use is at or over KV·(1+Headroom), or its waiting queue is at or over
// Queue·(1+Headroom). The saturation filter, the utilization detector and the capacity publisher
// all decide with it; the pool's figure is MeanLoad, and a cycle that finds every candidate
// saturated ends in ErrSaturated, the one error flow control queues on.
//
// The zero value is not valid; start from DefaultSaturation. A Saturation is a value: copy it
// freely, it is safe for concurrent use.
type Saturation struct {
	// Queue: a pod with this many waiting requests (times 1+Headroom) is saturated. Default 5.
	Queue int
	// KV: a pod with this KV-cache use, in (0,1] (times 1+Headroom), is saturated. Default 0.8.
	KV float64
	// Staleness: metrics older than this make a pod saturated. Default 2 s.
	Staleness time.Duration
	// Headroom relaxes Queue and KV to threshold·(1+Headroom). Default 0.
	Headroom float64
}

// Defaults of Saturation. GIE's utilization-detector defaults its staleness to 200 ms; the
// gateway uses 2 s because its scrape interval grows with the pod count (200 ms at 1,000 pods).
const (
	DefaultSaturationQueue     = 5
	DefaultSaturationKV        = 0.8
	DefaultSaturationStaleness = 2 * time.Second
)

// ErrSaturated is the scheduling outcome "every candidate is saturated" (a saturation filter
// removed the last one, or the pool's saturation detector reported MeanLoad >= 1). Flow control
// queues such a request; past its limits the front doors answer 429 with x-switchyard-overflow.
var ErrSaturated = errors.New("scheduling: all candidate endpoints are saturated")

// IsSaturated reports whether err means that every candidate endpoint is saturated.
func IsSaturated(err error) bool { return errors.Is(err, ErrSaturated) }

// DefaultSaturation returns queue 5, KV 0.8, staleness 2 s, no headroom.
func DefaultSaturation() Saturation {
	return Saturation{Queue: DefaultSaturationQueue, KV: DefaultSaturationKV, Staleness: DefaultSaturationStaleness}
}

// Validate returns an error naming the first invalid field (by its GIE parameter name).
func (s Saturation) Validate() error {
	switch {
	case s.Queue <= 0:
		return fmt.Errorf("queueDepthThreshold must be > 0, got %d", s.Queue)
	case s.KV <= 0 || s.KV > 1:
		return fmt.Errorf("kvCacheUtilThreshold must be in (0,1], got %g", s.KV)
	case s.Staleness <= 0:
		return fmt.Errorf("metricsStalenessThreshold must be > 0, got %s", s.Staleness)
	case s.Headroom < 0:
		return fmt.Errorf("headroom must be >= 0, got %g", s.Headroom)
	}
	return nil
}

// Saturated reports whether e is saturated at now (see Saturation).
func (s *Saturation) Saturated(e Endpoint, now time.Time) bool {
	m, unfit := s.Unfit(e, now)
	return unfit || s.QueueOver(float64(m.WaitingQueue))
}

// Unfit reports whether e is saturated at now for a reason other than its queue: ejected,
// metrics stale or failing, or KV use at or over KV·(1+Headroom). When it is false, m is e's
// metrics (present, since they are not stale), so the caller need not read them again.
func (s *Saturation) Unfit(e Endpoint, now time.Time) (m *Metrics, unfit bool) {
	if e.Ejected(now) || e.Stale(now, s.Staleness) {
		return nil, true
	}
	m = e.Metrics()
	if m == nil || m.KVUsage >= s.KV*(1+s.Headroom) {
		return nil, true
	}
	return m, false
}

// QueueOver reports whether a queue of waiting requests saturates a pod: at or over
// Queue·(1+Headroom).
func (s *Saturation) QueueOver(waiting float64) bool {
	return waiting >= float64(s.Queue)*(1+s.Headroom)
}

// Load is e's load at now, GIE's per-pod saturation score: max(queue/Queue, KV use/KV), 1 when
// the metrics are stale.
func (s *Saturation) Load(e Endpoint, now time.Time) float64 {
	if e.Stale(now, s.Staleness) {
		return 1
	}
	m := e.Metrics()
	return max(float64(m.WaitingQueue)/float64(s.Queue), m.KVUsage/s.KV)
}

// Loader rates one endpoint's load at an instant, 1 meaning at its limit. *Saturation is one;
// concurrency-detector's in-flight limit another. Implementations must be safe for concurrent
// use.
type Loader interface {
	Load(e Endpoint, now time.Time) float64
}

// MeanLoad is the pool's saturation figure: the mean load of eps at now, 1 for no endpoints.
// A pool whose figure is PoolSaturated is saturated as a whole.
func MeanLoad(l Loader, eps []Endpoint, now time.Time) float64 {
	if len(eps) == 0 {
		return 1
	}
	var sum float64
	for _, e := range eps {
		sum += l.Load(e, now)
	}
	return sum / float64(len(eps))
}

// PoolSaturated reports whether a pool saturation figure (MeanLoad, or a SaturationDetector's
// result) means the pool is saturated: at or over 1.
func PoolSaturated(figure float64) bool { return figure >= 1 }

// SaturatedShare is the capacity summary's saturation figure for a model: the share of its
// ready pods that are saturated (1 with no ready pod), and whether every one is.
func SaturatedShare(saturated, ready int) (share float64, all bool) {
	if ready <= 0 {
		return 1, true
	}
	return float64(saturated) / float64(ready), saturated >= ready
}
