package workload

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// The on/off defaults: 2 s bursts at 4× the mean rate every 8 s.
const (
	defaultBurstLength = 2 * time.Second
	defaultPeriod      = 8 * time.Second
	defaultBurstFactor = 4
)

// Validate reports the first problem found, naming the field.
func (w *Workload) Validate() error {
	if w.Duration <= 0 {
		return fmt.Errorf("duration: must be > 0, got %s", w.Duration)
	}
	if w.Endpoint != Chat && w.Endpoint != Completions {
		return fmt.Errorf("endpoint: %q is not chat or completions", w.Endpoint)
	}
	if w.Model == "" {
		return errors.New("model: must not be empty")
	}
	if !(w.Load >= 0 && w.Load <= 10) {
		return fmt.Errorf("load: must be in [0,10], got %v", w.Load)
	}
	if w.SLO != nil {
		if err := w.SLO.validate(); err != nil {
			return fmt.Errorf("slo.%w", err)
		}
	}
	if err := w.validateSLOHeaders(); err != nil {
		return err
	}
	if w.Trace != nil {
		if err := w.validateTrace(); err != nil {
			return err
		}
		return w.validateAdapters()
	}
	if err := w.validateArrivals(); err != nil {
		return err
	}
	if err := w.validateAdapters(); err != nil {
		return err
	}
	if err := w.validatePrompts(); err != nil {
		return err
	}
	if err := w.Output.validate(); err != nil {
		return fmt.Errorf("output.%w", err)
	}
	return nil
}

func (w *Workload) validateArrivals() error {
	switch {
	case w.Arrival == nil && len(w.Regions) == 0:
		return errors.New("arrival: required (or regions)")
	case w.Arrival != nil && len(w.Regions) > 0:
		return errors.New("arrival: exclusive with regions")
	case w.Arrival != nil:
		if err := w.Arrival.validate(); err != nil {
			return fmt.Errorf("arrival.%w", err)
		}
		return nil
	}
	seen := map[string]bool{}
	for i, r := range w.Regions {
		if r.Name == "" || seen[r.Name] {
			return fmt.Errorf("regions[%d].name: must be set and unique, got %q", i, r.Name)
		}
		seen[r.Name] = true
		if r.Arrival.Process == Closed {
			return fmt.Errorf("regions[%d].arrival.process: closed loops are not supported per region", i)
		}
		if err := r.Arrival.validate(); err != nil {
			return fmt.Errorf("regions[%d].arrival.%w", i, err)
		}
	}
	return nil
}

func (a *Arrival) validate() error {
	switch a.Process {
	case Closed:
		if a.Concurrency <= 0 {
			return fmt.Errorf("concurrency: must be > 0 for a closed loop, got %d", a.Concurrency)
		}
		return nil
	case Poisson, OnOff:
	default:
		return fmt.Errorf("process: %q is not poisson, onoff or closed", a.Process)
	}
	if !(a.Rate > 0) || math.IsInf(a.Rate, 0) {
		return fmt.Errorf("rate: must be > 0 req/s, got %v", a.Rate)
	}
	if a.Process != OnOff {
		return nil
	}
	switch {
	case a.BurstLength <= 0 || a.Period <= 0 || a.BurstLength >= a.Period:
		return fmt.Errorf("burst_length: must be > 0 and shorter than period (%s), got %s", a.Period, a.BurstLength)
	case !(a.BurstFactor >= 1):
		return fmt.Errorf("burst_factor: must be ≥ 1, got %v", a.BurstFactor)
	case a.BurstFactor*a.BurstLength.Seconds() > a.Period.Seconds()*(1+1e-9):
		return fmt.Errorf("burst_factor: %v × burst_length %s exceeds period %s (mean rate unreachable)",
			a.BurstFactor, a.BurstLength, a.Period)
	}
	return nil
}

func (w *Workload) validateAdapters() error {
	var sum float64
	seen := map[string]bool{w.Model: true}
	for i, a := range w.Adapters {
		if a.Name == "" || seen[a.Name] {
			return fmt.Errorf("adapters[%d].name: must be set, unique and differ from model, got %q", i, a.Name)
		}
		seen[a.Name] = true
		if !(a.Share > 0 && a.Share <= 1) {
			return fmt.Errorf("adapters[%d].share: must be in (0,1], got %v", i, a.Share)
		}
		sum += a.Share
	}
	if sum > 1+1e-9 {
		return fmt.Errorf("adapters: shares sum to %v, more than 1", sum)
	}
	return nil
}

func (w *Workload) validatePrompts() error {
	switch {
	case w.Prompt == nil && w.SharedPrefix == nil:
		return errors.New("prompt: required (or shared_prefix)")
	case w.Prompt != nil && w.SharedPrefix != nil:
		return errors.New("prompt: exclusive with shared_prefix")
	case w.Prompt != nil:
		if err := w.Prompt.validate(); err != nil {
			return fmt.Errorf("prompt.%w", err)
		}
		return nil
	}
	s := w.SharedPrefix
	switch {
	case s.Groups <= 0:
		return fmt.Errorf("shared_prefix.groups: must be > 0, got %d", s.Groups)
	case s.PromptsPerGroup <= 0:
		return fmt.Errorf("shared_prefix.prompts_per_group: must be > 0, got %d", s.PromptsPerGroup)
	case s.SystemTokens <= 0:
		return fmt.Errorf("shared_prefix.system_tokens: must be > 0, got %d", s.SystemTokens)
	case s.QuestionTokens <= 0:
		return fmt.Errorf("shared_prefix.question_tokens: must be > 0, got %d", s.QuestionTokens)
	}
	return nil
}

// maxTokens bounds every token count, so a typo cannot ask for gigabytes of prompt.
const maxTokens = 1 << 20

func (d *Dist) validate() error {
	switch d.Kind {
	case "fixed":
		if d.Value <= 0 || d.Value > maxTokens {
			return fmt.Errorf("value: must be in [1,%d], got %d", maxTokens, d.Value)
		}
	case "lognormal":
		if !(d.Mean >= 1 && d.Mean <= maxTokens) {
			return fmt.Errorf("mean: must be in [1,%d], got %v", maxTokens, d.Mean)
		}
		if !(d.Sigma >= 0 && d.Sigma <= 4) {
			return fmt.Errorf("sigma: must be in [0,4], got %v", d.Sigma)
		}
		return d.validateBounds(d.Max == 0)
	case "uniform":
		return d.validateBounds(false)
	case "":
		return fmt.Errorf("dist: required (lognormal, fixed or uniform)")
	default:
		return fmt.Errorf("dist: unknown distribution %q (want lognormal, fixed or uniform)", d.Kind)
	}
	return nil
}

func (d *Dist) validateBounds(openMax bool) error {
	if d.Min < 1 || d.Min > maxTokens {
		return fmt.Errorf("min: must be in [1,%d], got %d", maxTokens, d.Min)
	}
	if openMax {
		return nil
	}
	if d.Max < d.Min || d.Max > maxTokens {
		return fmt.Errorf("max: must be in [min=%d,%d], got %d", d.Min, maxTokens, d.Max)
	}
	return nil
}
