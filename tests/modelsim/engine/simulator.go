package engine

import (
	"context"
	"sort"
	"time"
)

// Simulator drives an engine on a virtual clock: a discrete-event simulation that computes each
// step's duration and jumps to its end, with no sleeping. The same configuration, seed and arrivals
// always give the same token timings. Not safe for concurrent use.
type Simulator struct {
	eng      *Engine
	clock    VirtualClock
	arrivals []arrival
	order    int
}

type arrival struct {
	at, ready time.Duration
	order     int
	req       Request
	h         *Handle
}

// NewSimulator returns a simulator over a new engine.
func NewSimulator(cfg Config) (*Simulator, error) {
	e, err := New(cfg, nil)
	if err != nil {
		return nil, err
	}
	return &Simulator{eng: e}, nil
}

// Engine returns the simulated engine (for Snapshot).
func (s *Simulator) Engine() *Engine { return s.eng }

// Now returns the virtual time.
func (s *Simulator) Now() time.Duration { return s.clock.Now() }

// Submit schedules r to arrive at virtual time at (not before Now). The request reaches the engine
// after the profile's API overhead. The returned handle fills in as the simulation runs.
func (s *Simulator) Submit(at time.Duration, r Request) (*Handle, error) {
	if err := s.eng.Check(r); err != nil {
		return nil, err
	}
	at = max(at, s.clock.Now())
	a := arrival{at: at, ready: at + s.eng.cfg.Profile.APIOverhead, order: s.order, req: r}
	s.order++
	a.h = newHandle()
	s.arrivals = append(s.arrivals, a)
	sort.SliceStable(s.arrivals, func(i, j int) bool { return s.arrivals[i].ready < s.arrivals[j].ready })
	return a.h, nil
}

// RunUntil advances the simulation until virtual time limit or until every submitted request has
// finished and the engine is idle, whichever comes first. It returns the virtual time reached.
func (s *Simulator) RunUntil(limit time.Duration) time.Duration {
	for s.clock.Now() < limit {
		s.deliver()
		dur, busy := s.eng.plan()
		if !busy {
			if len(s.arrivals) == 0 {
				break
			}
			_ = s.clock.SleepUntil(context.Background(), s.arrivals[0].ready)
			continue
		}
		end := s.clock.Now() + dur
		_ = s.clock.SleepUntil(context.Background(), end)
		s.eng.commit(end, dur)
	}
	return s.clock.Now()
}

// Run simulates until every submitted request has finished.
func (s *Simulator) Run() time.Duration { return s.RunUntil(1<<62 - 1) }

// deliver hands the engine every arrival that is due.
func (s *Simulator) deliver() {
	n := 0
	for n < len(s.arrivals) && s.arrivals[n].ready <= s.clock.Now() {
		a := s.arrivals[n]
		s.eng.submitHandle(a.req, a.at, a.h)
		n++
	}
	s.arrivals = append(s.arrivals[:0], s.arrivals[n:]...)
}
