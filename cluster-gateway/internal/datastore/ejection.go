package datastore

import (
	"time"
)

// refusalLogEvery bounds how often a refused ejection is logged: while the cap is reached, every
// further failure of a failing pod is refused (and counted).
const refusalLogEvery = 10 * time.Second

var _ ejectionGate = (*Store)(nil)

// admit lets e be ejected at now when fewer than MaxEjected of the store's endpoints (e aside)
// are ejected, calling eject under the store's ejection lock; otherwise it counts and logs the
// refusal and e stays in rotation.
func (s *Store) admit(e *Endpoint, now time.Time, eject func()) bool {
	s.ejectMu.Lock()
	eps := s.Endpoints()
	ejected := 0
	for _, ep := range eps {
		if ep != e && ep.Ejected(now) {
			ejected++
		}
	}
	limit := MaxEjected(len(eps), s.maxEjectionPercent)
	ok := ejected < limit
	if ok {
		eject()
	}
	s.ejectMu.Unlock()
	if ok {
		s.metrics.ejections.Inc()
		return true
	}
	s.metrics.refused.Inc()
	if last := s.refusalLogged.Load(); now.UnixNano()-last >= int64(refusalLogEvery) &&
		s.refusalLogged.CompareAndSwap(last, now.UnixNano()) {
		s.logger.Warn("ejection refused: the pool's ejection cap is reached; the endpoint stays in rotation",
			"endpoint", e.Name, "address", e.Address, "ejected", ejected, "endpoints", len(eps),
			"max_ejection_percent", s.maxEjectionPercent)
	}
	return false
}
