package workload

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/trace"
)

// Trace replays a recorded trace (package trace) instead of drawing arrivals and lengths: arrival
// times from the trace, replayed TimeScale times faster; prompt and output lengths from it,
// optionally scaled; and for Mooncake traces prompts built from the hash ids, so that requests
// whose ids share a leading run share exactly that prefix.
//
// The replayed window starts at Start (recorded time) and lasts the workload's Duration of
// replay time, that is Duration × TimeScale of the recording, or MaxRequests requests, whichever
// ends first. The trace is read as a stream, but the window's requests (prompts included) are held
// in memory, as every workload's schedule is: about 50 MB for 1,000 full-length Mooncake prompts.
type Trace struct {
	// Format is mooncake or azure.
	Format trace.Format `yaml:"format"`
	// Path is the trace file. A relative path is taken from the workload file's directory, and
	// for an embedded workload from the repository root (the nearest directory above the working
	// directory that holds go.work; else the working directory).
	Path string `yaml:"path"`
	// TimeScale replays the trace at TimeScale × its recorded rate (default 1): a recorded gap g
	// becomes g / TimeScale.
	TimeScale float64 `yaml:"time_scale"`
	// PromptScale multiplies prompt lengths (default 1). A Mooncake block then stands for
	// 512 × PromptScale tokens, rounded to a multiple of 16 (the KV cache's block), so shared
	// prefixes keep their block structure.
	PromptScale float64 `yaml:"prompt_scale"`
	// OutputScale multiplies output lengths (default 1); max_tokens is at least 1.
	OutputScale float64 `yaml:"output_scale"`
	// Start skips the recording's first Start of arrivals.
	Start time.Duration `yaml:"start"`
	// MaxRequests caps the requests replayed (0 = no cap).
	MaxRequests int `yaml:"max_requests"`
	// Sessions gives each request of a Mooncake trace the session id of its conversation
	// (Request.Session, sent as the body's user): the record's first two hash ids, the block every
	// request shares and the conversation's own first block, so the turns of one conversation,
	// whose ids extend the same leading run, carry one id. Ignored for traces without hash ids.
	Sessions bool `yaml:"sessions"`

	// dir is the directory a relative Path is taken from ("" = the working directory).
	dir string
}

// ErrTraceMissing is returned by Generate when a trace workload's file does not exist.
var ErrTraceMissing = errors.New("workload: trace file not found")

// File returns the path of the trace file, a relative Path resolved as documented.
func (t *Trace) File() string {
	if t.dir == "" || filepath.IsAbs(t.Path) {
		return t.Path
	}
	return filepath.Join(t.dir, t.Path)
}

// Bounds of the trace settings.
const (
	maxTraceTimeScale   = 1000
	maxTraceLengthScale = 16
)

func (t *Trace) fillDefaults() {
	for _, f := range []*float64{&t.TimeScale, &t.PromptScale, &t.OutputScale} {
		if *f == 0 {
			*f = 1
		}
	}
}

func (t *Trace) validate() error {
	if err := t.Format.Validate(); err != nil {
		return fmt.Errorf("format: %q is not %s", t.Format, formatList())
	}
	switch {
	case t.Path == "":
		return errors.New("path: required")
	case !(t.TimeScale > 0 && t.TimeScale <= maxTraceTimeScale):
		return fmt.Errorf("time_scale: must be in (0,%d], got %v", maxTraceTimeScale, t.TimeScale)
	case !(t.PromptScale > 0 && t.PromptScale <= maxTraceLengthScale):
		return fmt.Errorf("prompt_scale: must be in (0,%d], got %v", maxTraceLengthScale, t.PromptScale)
	case !(t.OutputScale > 0 && t.OutputScale <= maxTraceLengthScale):
		return fmt.Errorf("output_scale: must be in (0,%d], got %v", maxTraceLengthScale, t.OutputScale)
	case t.Start < 0 || t.Start > trace.MaxTimestamp:
		return fmt.Errorf("start: must be in [0,%s], got %s", trace.MaxTimestamp, t.Start)
	case t.MaxRequests < 0:
		return fmt.Errorf("max_requests: must be >= 0, got %d", t.MaxRequests)
	}
	return nil
}

func formatList() string {
	s := make([]string, len(trace.Formats))
	for i, f := range trace.Formats {
		s[i] = string(f)
	}
	return strings.Join(s, " or ")
}

// validateTrace checks a trace workload: the trace settings, and none of the parts a trace
// replaces.
func (w *Workload) validateTrace() error {
	for _, c := range []struct {
		set  bool
		name string
	}{
		{w.Arrival != nil, "arrival"}, {len(w.Regions) > 0, "regions"}, {w.Prompt != nil, "prompt"},
		{w.SharedPrefix != nil, "shared_prefix"}, {w.Output.Kind != "", "output"},
		{w.Load != 0, "load"},
	} {
		if c.set {
			return fmt.Errorf(
				"%s: exclusive with trace (the trace gives arrivals and lengths; trace.time_scale sets the rate)",
				c.name,
			)
		}
	}
	if err := w.Trace.validate(); err != nil {
		return fmt.Errorf("trace.%w", err)
	}
	return nil
}

// WithTrace returns a copy of a trace workload with edit applied to its trace settings. A Path
// that edit sets is taken as given (relative to the working directory).
func (w *Workload) WithTrace(edit func(t *Trace)) (*Workload, error) {
	if w.Trace == nil {
		return nil, fmt.Errorf("trace: workload %s replays no trace", w.Name)
	}
	c := w.Clone()
	path := c.Trace.Path
	edit(c.Trace)
	if c.Trace.Path != path {
		c.Trace.dir = ""
	}
	return c, c.Validate()
}

// repoRoot returns the nearest directory at or above the working directory that holds go.work,
// or "" when there is none.
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// generateTrace reads the trace window of w and turns each record into a request.
func generateTrace(w *Workload, seed uint64) ([]Request, error) {
	t := w.Trace
	f, err := trace.Open(t.Format, t.File())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: workload %s: %s (the traces are not part of the repository: download it, "+
			"or give its path with trace.path or loadgen --trace=FILE)", ErrTraceMissing, w.Name, t.File())
	}
	if err != nil {
		return nil, fmt.Errorf("workload %s: %w", w.Name, err)
	}
	defer f.Close()
	end := traceEnd(t.Start, w.Duration, t.TimeScale)
	g := NewGenerator(w, seed)
	var reqs []Request
	for t.MaxRequests == 0 || len(reqs) < t.MaxRequests {
		rec, err := f.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("workload %s: %s: %w", w.Name, t.File(), err)
		}
		if rec.At < t.Start {
			continue
		}
		if rec.At >= end {
			break
		}
		r, err := g.traceRequest(len(reqs), &rec)
		if err != nil {
			return nil, fmt.Errorf("workload %s: %s line %d: %w", w.Name, t.File(), rec.Line, err)
		}
		r.At = time.Duration(float64(rec.At-t.Start) / t.TimeScale)
		reqs = append(reqs, r)
	}
	return reqs, nil
}

// traceEnd is the end of the recorded window: start + d × scale, capped past the longest trace.
func traceEnd(start, d time.Duration, scale float64) time.Duration {
	end := float64(start) + float64(d)*scale
	if end > float64(trace.MaxTimestamp) {
		return trace.MaxTimestamp + 1
	}
	return time.Duration(end)
}

// blockSalt keeps the random streams of prompt blocks apart from the generator's other streams.
const blockSalt = 0x9e3779b97f4a7c15

// traceRequest is the request of trace record rec, the i-th of the replay. A scaled length
// beyond the workload's token bound is an error.
func (g *Generator) traceRequest(i int, rec *trace.Record) (Request, error) {
	t := g.w.Trace
	rng := rand.New(rand.NewPCG(g.seed, domainContent|uint64(i)))
	r := Request{Index: i, Endpoint: g.w.Endpoint, Model: g.pickModel(rng), Group: -1}
	block := ScaledBlockTokens(t.PromptScale)
	if rec.HashIDs != nil {
		r.PromptTokens = blockPromptTokens(rec, block)
	} else {
		r.PromptTokens = max(1, int(math.Round(float64(rec.InputTokens)*t.PromptScale)))
	}
	r.MaxTokens = max(1, int(math.Round(float64(rec.OutputTokens)*t.OutputScale)))
	if r.PromptTokens > maxTokens || r.MaxTokens > maxTokens {
		return Request{}, fmt.Errorf(
			"%d prompt and %d output tokens after scaling, more than %d",
			r.PromptTokens,
			r.MaxTokens,
			maxTokens,
		)
	}
	if rec.HashIDs != nil {
		r.Prompt = blockPrompt(g.seed, rec, block, r.PromptTokens)
		if t.Sessions {
			r.Session = sessionOf(rec.HashIDs)
		}
	} else {
		r.Prompt = uniquePrompt(rng, i, r.PromptTokens*CharsPerToken)
	}
	return r, nil
}

// sessionOf is the session id of a Mooncake record with hash ids ids: its first two ids.
func sessionOf(ids []uint64) string {
	s := "conv-" + strconv.FormatUint(ids[0], 10)
	if len(ids) > 1 {
		s += "-" + strconv.FormatUint(ids[1], 10)
	}
	return s
}

// ScaledBlockTokens is the prompt tokens one Mooncake hash id stands for at prompt scale s:
// 512 × s rounded to a multiple of 16, at least 16.
func ScaledBlockTokens(s float64) int {
	return max(16, int(math.Round(trace.BlockTokens*s/16))*16)
}

// blockPrompt builds a Mooncake record's prompt of total tokens: one block of deterministic text
// per hash id, each block tokens long, the last one cut to the record's length (scaled alike). A block's text
// depends only on the seed and its id, and a cut block is a prefix of the whole one, so two
// prompts share exactly the blocks of their common leading ids.
func blockPrompt(seed uint64, rec *trace.Record, tokens, total int) string {
	n := len(rec.HashIDs)
	var b strings.Builder
	b.Grow(total * CharsPerToken)
	for j, id := range rec.HashIDs {
		k := tokens
		if j == n-1 {
			k = total - (n-1)*tokens
		}
		writeBlock(&b, seed, id, k*CharsPerToken)
	}
	return b.String()
}

// blockPromptTokens is the length of rec's prompt with blocks of tokens: whole blocks for all
// ids but the last, whose share of a block is scaled alike (rounded up).
func blockPromptTokens(rec *trace.Record, tokens int) int {
	n := len(rec.HashIDs)
	last := rec.InputTokens - (n-1)*trace.BlockTokens
	return (n-1)*tokens + (last*tokens+trace.BlockTokens-1)/trace.BlockTokens
}

// writeBlock appends the first n bytes of block id's text: a tag naming the id (so blocks of
// different ids differ from their first bytes), then prose from a stream seeded by the id.
func writeBlock(b *strings.Builder, seed, id uint64, n int) {
	head := "[block " + strconv.FormatUint(id, 10) + "] "
	if n <= len(head) {
		b.WriteString(head[:n])
		return
	}
	b.WriteString(head)
	writeText(b, rand.New(rand.NewPCG(seed^blockSalt, id)), n-len(head))
}

// uniquePrompt returns n bytes of prose that start with the request's index, so that no two
// requests share a prefix block.
func uniquePrompt(rng *rand.Rand, i, n int) string {
	var b strings.Builder
	b.Grow(n)
	head := "Request " + strconv.Itoa(i) + ". "
	if n <= len(head) {
		return head[:n]
	}
	b.WriteString(head)
	writeText(&b, rng, n-len(head))
	return b.String()
}
