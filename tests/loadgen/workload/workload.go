// Package workload describes loadgen workloads and turns them into request sequences.
//
// A workload is a YAML file: an arrival process (Poisson, on/off bursts or a closed loop), the
// endpoint, the model and adapters with their shares, and the prompt and output length distributions
// (or shared-prefix groups). Generate turns a workload and a seed into the exact same sequence of
// requests every time: arrival instants, prompt bytes, models and max_tokens.
package workload

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Endpoint is the OpenAI API a workload calls.
type Endpoint string

// The endpoints a workload may call.
const (
	// Completions is /v1/completions with a prompt string.
	Completions Endpoint = "completions"
	// Chat is /v1/chat/completions with a system and a user message.
	Chat Endpoint = "chat"
)

// Process names an arrival process.
type Process string

// The arrival processes.
const (
	// Poisson sends open-loop arrivals with exponential gaps at Rate.
	Poisson Process = "poisson"
	// OnOff sends open-loop Poisson arrivals whose rate is BurstFactor×Rate for BurstLength at the
	// start of every Period and lower in between, so that the mean stays Rate.
	OnOff Process = "onoff"
	// Closed keeps Concurrency requests in flight: each finished request starts the next one.
	Closed Process = "closed"
)

// CharsPerToken is how many prompt characters make one token (the simulator counts the same way).
const CharsPerToken = 4

// Workload is one named benchmark shape. Load fills defaults and validates it.
type Workload struct {
	// Name selects the workload (the file name of the embedded ones, without .yaml).
	Name string `yaml:"name"`
	// Description says what the workload tests.
	Description string `yaml:"description"`
	// Seed is the default seed; the same seed gives the same request sequence.
	Seed uint64 `yaml:"seed"`
	// Duration is how long arrivals are sent (default 60s). Requests in flight then finish.
	Duration time.Duration `yaml:"duration"`
	// Load is the fraction of fleet capacity the mean rate stands for; with a measured capacity C
	// (req/s of this shape the fleet sustains) the intended rate is Load×C (see WithCapacity).
	Load float64 `yaml:"load"`
	// Endpoint is completions or chat (default chat).
	Endpoint Endpoint `yaml:"endpoint"`
	// Model is the base model name sent in requests (default llama-3.1-8b).
	Model string `yaml:"model"`
	// Adapters are LoRA adapters with their share of requests; the rest goes to Model.
	Adapters []Adapter `yaml:"adapters"`
	// Stream asks for SSE streaming (default true); TTFT is only meaningful when streaming.
	Stream bool `yaml:"stream"`
	// IgnoreEOS asks the server to generate exactly max_tokens (vLLM's ignore_eos).
	IgnoreEOS bool `yaml:"ignore_eos"`
	// Arrival is the arrival process of all clients. Exclusive with Regions.
	Arrival *Arrival `yaml:"arrival"`
	// Regions splits clients by region, each with its own arrival process. Exclusive with Arrival.
	Regions []Region `yaml:"regions"`
	// Prompt is the prompt length distribution in tokens. Exclusive with SharedPrefix.
	Prompt *Dist `yaml:"prompt"`
	// Output is the max_tokens distribution.
	Output Dist `yaml:"output"`
	// SharedPrefix makes prompts in groups that share a long system prompt.
	SharedPrefix *SharedPrefix `yaml:"shared_prefix"`
	// Trace replays a recorded trace: its arrivals, lengths and (Mooncake) shared prefixes.
	// Exclusive with Arrival, Regions, Prompt, SharedPrefix, Output and Load.
	Trace *Trace `yaml:"trace"`
	// SLO, when set, is the per-request objective the report's goodput counts against.
	SLO *SLO `yaml:"slo"`
	// SLOHeaders are shares of the requests that carry latency objectives (and an objective
	// name or priority) in request headers; see SLOClass.
	SLOHeaders []SLOClass `yaml:"slo_headers"`
}

// SLO is a per-request service-level objective: a request meets it when it succeeded, its time to
// first token is at most TTFT and its time per output token after the first is at most TPOT (a
// zero bound is not checked).
type SLO struct {
	// TTFT bounds the time to first token.
	TTFT time.Duration `yaml:"ttft"`
	// TPOT bounds the mean time per output token after the first: (E2E − TTFT) / (tokens − 1).
	TPOT time.Duration `yaml:"tpot"`
}

// Met reports whether a successful request with these times and output tokens meets s.
func (s *SLO) Met(ttft, e2e time.Duration, outputTokens int) bool {
	if s.TTFT > 0 && ttft > s.TTFT {
		return false
	}
	if s.TPOT > 0 && outputTokens > 1 && (e2e-ttft)/time.Duration(outputTokens-1) > s.TPOT {
		return false
	}
	return true
}

func (s *SLO) validate() error {
	switch {
	case s.TTFT < 0:
		return fmt.Errorf("ttft: must be >= 0, got %s", s.TTFT)
	case s.TPOT < 0:
		return fmt.Errorf("tpot: must be >= 0, got %s", s.TPOT)
	case s.TTFT == 0 && s.TPOT == 0:
		return errors.New("ttft, tpot: set at least one")
	}
	return nil
}

// Adapter is a LoRA adapter and the fraction of requests that name it.
type Adapter struct {
	// Name is the adapter's model name in requests.
	Name string `yaml:"name"`
	// Share is the fraction of requests in (0,1]; shares of all adapters sum to at most 1.
	Share float64 `yaml:"share"`
}

// Region is one region's clients.
type Region struct {
	// Name is the region; a target may map it to that region's URL.
	Name string `yaml:"name"`
	// Arrival is this region's arrival process (open loop only).
	Arrival Arrival `yaml:"arrival"`
}

// Arrival is an arrival process.
type Arrival struct {
	// Process is poisson, onoff or closed.
	Process Process `yaml:"process"`
	// Rate is the mean arrival rate in requests per second (poisson, onoff).
	Rate float64 `yaml:"rate"`
	// BurstLength is how long each burst lasts (onoff, default 2s).
	BurstLength time.Duration `yaml:"burst_length"`
	// Period is the time from one burst's start to the next (onoff, default 8s).
	Period time.Duration `yaml:"period"`
	// BurstFactor is the rate within a burst as a multiple of Rate (onoff, default 4). The rate
	// between bursts is set so that the mean stays Rate; BurstFactor×BurstLength ≤ Period.
	BurstFactor float64 `yaml:"burst_factor"`
	// Concurrency is the number of requests kept in flight per target (closed).
	Concurrency int `yaml:"concurrency"`
}

// Dist is a distribution of token counts.
type Dist struct {
	// Kind is lognormal, fixed or uniform.
	Kind string `yaml:"dist"`
	// Mean is the lognormal's mean in tokens.
	Mean float64 `yaml:"mean"`
	// Sigma is the lognormal's shape (standard deviation of the log).
	Sigma float64 `yaml:"sigma"`
	// Value is the fixed count.
	Value int `yaml:"value"`
	// Min is the smallest count drawn (uniform bound; lognormal clamp, default 1).
	Min int `yaml:"min"`
	// Max is the largest count drawn (uniform bound; lognormal clamp, 0 = none).
	Max int `yaml:"max"`
}

// SharedPrefix describes groups of prompts that share a system prompt byte for byte.
type SharedPrefix struct {
	// Groups is the number of distinct system prompts.
	Groups int `yaml:"groups"`
	// PromptsPerGroup is the number of distinct questions per group.
	PromptsPerGroup int `yaml:"prompts_per_group"`
	// SystemTokens is the length of each group's system prompt.
	SystemTokens int `yaml:"system_tokens"`
	// QuestionTokens is the length of each question.
	QuestionTokens int `yaml:"question_tokens"`
}

// defaults returns a workload with every default set; decoding overwrites what the file gives.
func defaults() Workload {
	return Workload{
		Duration: 60 * time.Second,
		Endpoint: Chat,
		Model:    "llama-3.1-8b",
		Stream:   true,
	}
}

// IsTrace reports whether the workload replays a recorded trace.
func (w *Workload) IsTrace() bool { return w.Trace != nil }

// IsClosedLoop reports whether the workload keeps a fixed number of requests in flight instead
// of following an arrival schedule.
func (w *Workload) IsClosedLoop() bool {
	return w.Arrival != nil && w.Arrival.Process == Closed
}

// MeanRate is the total mean arrival rate over all regions (0 for closed loops and for traces,
// whose rate is known once the trace is read: the generated requests over Duration).
func (w *Workload) MeanRate() float64 {
	if w.Arrival != nil {
		if w.Arrival.Process == Closed {
			return 0
		}
		return w.Arrival.Rate
	}
	var sum float64
	for _, r := range w.Regions {
		sum += r.Arrival.Rate
	}
	return sum
}

// Clone returns a deep copy, so overrides never change a shared workload.
func (w *Workload) Clone() *Workload {
	c := *w
	c.Adapters = append([]Adapter(nil), w.Adapters...)
	c.Regions = append([]Region(nil), w.Regions...)
	if w.Arrival != nil {
		a := *w.Arrival
		c.Arrival = &a
	}
	if w.Prompt != nil {
		p := *w.Prompt
		c.Prompt = &p
	}
	if w.SharedPrefix != nil {
		s := *w.SharedPrefix
		c.SharedPrefix = &s
	}
	if w.Trace != nil {
		t := *w.Trace
		c.Trace = &t
	}
	if w.SLO != nil {
		s := *w.SLO
		c.SLO = &s
	}
	c.SLOHeaders = slices.Clone(w.SLOHeaders) // Priority pointers are shared: never written
	return &c
}
