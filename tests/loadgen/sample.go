package loadgen

import (
	"path/filepath"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// traceInfo describes w's trace replay of n requests (nil for other workloads).
func traceInfo(w *workload.Workload, n int) *TraceInfo {
	t := w.Trace
	if t == nil {
		return nil
	}
	return &TraceInfo{
		Format: string(t.Format), File: filepath.Base(t.Path), TimeScale: t.TimeScale,
		PromptScale: t.PromptScale, OutputScale: t.OutputScale, StartS: t.Start.Seconds(), Requests: n,
		Attribution: t.Format.Attribution(),
	}
}

// ErrorKind classifies a failed request. The empty kind means success.
type ErrorKind string

// The error kinds a sample can carry.
const (
	// ErrHTTP429 is a 429 answer (shed or rate limited).
	ErrHTTP429 ErrorKind = "http_429"
	// ErrHTTP4xx is any other 4xx answer.
	ErrHTTP4xx ErrorKind = "http_4xx"
	// ErrHTTP5xx is a 5xx answer.
	ErrHTTP5xx ErrorKind = "http_5xx"
	// ErrTransport is a connection failure before or while reading the response.
	ErrTransport ErrorKind = "transport"
	// ErrStream is a stream cut before [DONE] or carrying an undecodable chunk.
	ErrStream ErrorKind = "stream"
	// ErrSSE is an error event inside a 200 stream.
	ErrSSE ErrorKind = "sse_error"
	// ErrEmpty is a successful answer without a single generated token.
	ErrEmpty ErrorKind = "empty"
	// ErrTimeout is a request that outlived Config.RequestTimeout.
	ErrTimeout ErrorKind = "timeout"
	// ErrOverload is a request loadgen did not send because the target already had
	// Config.MaxInFlight requests in flight.
	ErrOverload ErrorKind = "overload"
	// ErrCanceled is a request cut short because the run was canceled.
	ErrCanceled ErrorKind = "canceled"
)

// Sample is the measurement of one request to one target.
type Sample struct {
	// Index is the request's index in the workload sequence.
	Index int
	// Region is the client region of the request ("" without regions).
	Region string
	// Model is the model or adapter requested.
	Model string
	// Scheduled is when the request was due, from the start of the run.
	Scheduled time.Duration
	// Sent is when it was actually sent, from the start of the run.
	Sent time.Duration
	// TTFT is the time from sending to the first generated token (0 when failed).
	TTFT time.Duration
	// E2E is the time from sending to the end of the response.
	E2E time.Duration
	// ITLs are the gaps between consecutive content events.
	ITLs []time.Duration
	// MaxTokens is the output length asked for.
	MaxTokens int
	// PromptTokens is the prompt length: the server's usage when reported, else the generated length.
	PromptTokens int
	// CachedTokens is usage.prompt_tokens_details.cached_tokens (0 when not reported).
	CachedTokens int
	// OutputTokens is usage.completion_tokens when reported, else the number of content events.
	OutputTokens int
	// Status is the HTTP status (0 when none arrived).
	Status int
	// Error classifies a failure; empty on success.
	Error ErrorKind
	// ErrorMessage says more about a failure.
	ErrorMessage string
	// Endpoint is the x-switchyard-endpoint response header.
	Endpoint string
	// Cluster is the x-switchyard-cluster response header.
	Cluster string
	// ServedRegion is the x-switchyard-region response header.
	ServedRegion string
	// Route is the x-switchyard-route response header.
	Route string
	// SLOClass is 1 + the index in the workload's SLOHeaders of the class whose headers the
	// request carried; 0 when it carried none.
	SLOClass int
}

// OK reports whether the request succeeded.
func (s *Sample) OK() bool { return s.Error == "" }

// Result holds every sample of a run.
type Result struct {
	// Workload is the workload's name.
	Workload string
	// Seed is the seed the sequence was generated with.
	Seed uint64
	// Rate is the workload's mean arrival rate in req/s (0 for closed loops).
	Rate float64
	// Duration is how long arrivals were sent.
	Duration time.Duration
	// Started is when the run began.
	Started time.Time
	// Elapsed is the time from the start to the last response.
	Elapsed time.Duration
	// Targets holds one result per target, in the order given.
	Targets []TargetResult
	// Trace describes the replayed trace (trace workloads only).
	Trace *TraceInfo
	// SLO is the workload's per-request objective (nil when it sets none).
	SLO *workload.SLO
	// SLOClasses are the workload's SLOHeaders (Sample.SLOClass indexes them from 1).
	SLOClasses []workload.SLOClass
}

// TraceInfo describes a trace replay, for reports.
type TraceInfo struct {
	// Format is the trace's format; File its file name (without its directory).
	Format string `json:"format"`
	File   string `json:"file"`
	// TimeScale is the replay's rate as a multiple of the recorded one; PromptScale and
	// OutputScale the length factors.
	TimeScale   float64 `json:"time_scale"`
	PromptScale float64 `json:"prompt_scale"`
	OutputScale float64 `json:"output_scale"`
	// StartS is where in the recording the window starts, in seconds; Requests how many
	// requests it holds.
	StartS   float64 `json:"start_s"`
	Requests int     `json:"requests"`
	// Attribution is the citation the trace's licence asks for with its results.
	Attribution string `json:"attribution"`
}

// TargetResult is one target's samples, ordered by request index.
type TargetResult struct {
	// Name is the target's name.
	Name string
	// URL is the target's base URL (the first one for per-region targets).
	URL string
	// Samples has one entry per request sent (or refused by the in-flight cap).
	Samples []Sample
}
