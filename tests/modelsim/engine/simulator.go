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
	// planned is the virtual time of the last delivery (the start of the last step, or the last
	// time the engine was found idle); -1 before the first one.
	planned time.Duration
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
	return &Simulator{eng: e, planned: -1}, nil
}

// Engine returns the simulated engine (for Snapshot).
func (s *Simulator) Engine() *Engine { return s.eng }

// Now returns the virtual time.
func (s *Simulator) Now() time.Duration { return s.clock.Now() }

// Submit schedules r to arrive at virtual time at. The request reaches the engine after the
// physics model's API overhead for its prompt (Engine.APIOverhead). The returned handle fills in as the simulation
// runs.
//
// at may lie before Now (a step in progress when the request arrived has already been simulated
// to its end) as long as the request reaches the engine after the last step started: it then joins
// at the next step boundary with its arrival time kept, exactly as if it had been submitted before
// the simulation ran past it. RunUntil(at + API overhead) before Submit guarantees this. A request
// that would have reached the engine earlier arrives at Now instead.
func (s *Simulator) Submit(at time.Duration, r Request) (*Handle, error) {
	if err := s.eng.Check(r); err != nil {
		return nil, err
	}
	overhead := s.eng.APIOverhead(r.PromptTokens)
	if at+overhead <= s.planned {
		at = max(at, s.clock.Now())
	}
	a := arrival{at: at, ready: at + overhead, order: s.order, req: r}
	s.order++
	a.h = newHandle()
	s.arrivals = append(s.arrivals, a)
	sort.SliceStable(s.arrivals, func(i, j int) bool { return s.arrivals[i].ready < s.arrivals[j].ready })
	return a.h, nil
}

// RunUntil advances the simulation until virtual time limit or until every submitted request has
// finished and the engine is idle, whichever comes first: it runs every step that starts before
// limit (the last one may end after it). It returns the virtual time reached, which is below limit
// when the engine went idle with no arrival due before limit.
func (s *Simulator) RunUntil(limit time.Duration) time.Duration {
	for s.clock.Now() < limit && s.advance(limit) {
	}
	return s.clock.Now()
}

// Run simulates until every submitted request has finished.
func (s *Simulator) Run() time.Duration { return s.RunUntil(forever) }

// forever is a virtual time no simulation reaches.
const forever = time.Duration(1<<62 - 1)

// RunUntilFirstToken advances the simulation until h, a request submitted to this simulator, has
// produced its first token, or nothing is left to simulate. It reports whether h has a first token.
func (s *Simulator) RunUntilFirstToken(h *Handle) bool {
	for h.Progress().Generated == 0 {
		if !s.advance(forever) {
			return false
		}
	}
	return true
}

// advance delivers due arrivals and runs one step. When the engine is idle it jumps to the next
// arrival due before limit and delivers it in the same call, so that the time of the last delivery
// (planned) is never behind a jump. It returns false when no step starts before limit.
func (s *Simulator) advance(limit time.Duration) bool {
	for {
		s.deliver()
		s.planned = s.clock.Now()
		dur, busy := s.eng.plan()
		if busy {
			end := s.clock.Now() + dur
			_ = s.clock.SleepUntil(context.Background(), end)
			s.eng.commit(end, dur)
			return true
		}
		if len(s.arrivals) == 0 || s.arrivals[0].ready >= limit {
			return false
		}
		_ = s.clock.SleepUntil(context.Background(), s.arrivals[0].ready)
	}
}

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
