package workload

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// WithRate returns a copy whose total mean rate is rate req/s; region rates keep their proportions.
func (w *Workload) WithRate(rate float64) (*Workload, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("rate: must be > 0 req/s, got %v", rate)
	}
	if w.IsClosedLoop() {
		return nil, fmt.Errorf("rate: workload %s is a closed loop (arrival.concurrency sets its load)", w.Name)
	}
	if w.Trace != nil {
		return nil, fmt.Errorf("rate: workload %s replays a trace (trace.time_scale sets its rate)", w.Name)
	}
	c := w.Clone()
	scale := rate / w.MeanRate()
	if c.Arrival != nil {
		c.Arrival.Rate *= scale
	}
	for i := range c.Regions {
		c.Regions[i].Arrival.Rate *= scale
	}
	return c, c.Validate()
}

// WithCapacity returns a copy whose mean rate is Load × capacity, capacity being the rate in req/s
// of this workload's shape that the fleet under test sustains with a bounded queue.
func (w *Workload) WithCapacity(capacity float64) (*Workload, error) {
	if w.Trace != nil {
		return nil, fmt.Errorf("capacity: workload %s replays a trace (trace.time_scale sets its rate)", w.Name)
	}
	if w.Load <= 0 {
		return nil, fmt.Errorf("capacity: workload %s sets no load fraction", w.Name)
	}
	if !(capacity > 0) {
		return nil, fmt.Errorf("capacity: must be > 0 req/s, got %v", capacity)
	}
	return w.WithRate(w.Load * capacity)
}

// WithDuration returns a copy that sends arrivals for d.
func (w *Workload) WithDuration(d time.Duration) (*Workload, error) {
	if d <= 0 {
		return nil, fmt.Errorf("duration: must be > 0, got %s", d)
	}
	c := w.Clone()
	c.Duration = d
	return c, nil
}

// WithSLO returns a copy whose goodput is counted against s.
func (w *Workload) WithSLO(s SLO) (*Workload, error) {
	c := w.Clone()
	c.SLO = &s
	return c, c.Validate()
}

// WithSLOHeaders returns a copy whose requests carry the objectives of classes in headers.
func (w *Workload) WithSLOHeaders(classes []SLOClass) (*Workload, error) {
	c := w.Clone()
	c.SLOHeaders = slices.Clone(classes)
	return c, c.Validate()
}

// WithModel returns a copy whose requests name model as the base model.
func (w *Workload) WithModel(model string) (*Workload, error) {
	c := w.Clone()
	c.Model = model
	return c, c.Validate()
}

// WithAdapters returns a copy whose adapters are renamed, in order, to names (shares are kept).
func (w *Workload) WithAdapters(names []string) (*Workload, error) {
	if len(names) != len(w.Adapters) {
		return nil, fmt.Errorf("adapters: workload %s has %d adapters, %d names given", w.Name, len(w.Adapters), len(names))
	}
	if len(names) == 0 {
		return nil, errors.New("adapters: no names given")
	}
	c := w.Clone()
	for i, n := range names {
		c.Adapters[i].Name = n
	}
	return c, c.Validate()
}
