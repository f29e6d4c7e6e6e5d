package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// Request is one generated request. The same workload and seed always give the same requests.
type Request struct {
	// Index is the request's position in the sequence, from 0.
	Index int
	// At is when the request is sent, from the start of the run (0 in closed loops).
	At time.Duration
	// Region is the client region that sends it ("" without regions).
	Region string
	// Endpoint is the API called.
	Endpoint Endpoint
	// Model is the base model or adapter named in the request.
	Model string
	// System is the shared part of the prompt: the chat system message, or the head of a
	// completions prompt. Requests of one shared-prefix group carry the same bytes.
	System string
	// Prompt is the user message, or the rest of a completions prompt.
	Prompt string
	// PromptTokens is the prompt length in tokens (CharsPerToken characters each).
	PromptTokens int
	// MaxTokens is the output length asked for.
	MaxTokens int
	// Group is the shared-prefix group, or -1.
	Group int
	// Session is the conversation the request belongs to, sent as the body's user (session
	// affinity); "" for none.
	Session string
}

// Text is the whole prompt as a completions request sends it.
func (r *Request) Text() string { return r.System + r.Prompt }

// ErrClosedLoop is returned by Generate for a closed-loop workload, which has no schedule; use
// NewGenerator and Generator.Request instead.
var ErrClosedLoop = errors.New("workload: closed-loop workload has no arrival schedule")

// Domains that keep the random streams of a seed independent of each other.
const (
	domainContent  = 1 << 60
	domainArrivals = 2 << 60
	domainGroup    = 3 << 60
	domainQuestion = 4 << 60
)

// Generator makes the requests of one workload and seed. It is safe for concurrent use.
type Generator struct {
	w        *Workload
	seed     uint64
	prefixes []string // one system prompt per shared-prefix group
}

// NewGenerator prepares the requests of w with seed (shared-prefix system prompts are built here).
func NewGenerator(w *Workload, seed uint64) *Generator {
	g := &Generator{w: w, seed: seed}
	if sp := w.SharedPrefix; sp != nil {
		g.prefixes = make([]string, sp.Groups)
		for i := range g.prefixes {
			rng := rand.New(rand.NewPCG(seed, domainGroup|uint64(i)))
			head := fmt.Sprintf("Group %d. ", i)
			g.prefixes[i] = head + text(rng, max(0, sp.SystemTokens*CharsPerToken-len(head)-2)) + "\n\n"
		}
	}
	return g
}

// Request returns request i's content (model, prompt, max_tokens); At and Region are left zero.
// It depends only on the workload, the seed and i. A trace workload's requests come from its
// trace: Generate returns them.
func (g *Generator) Request(i int) Request {
	rng := rand.New(rand.NewPCG(g.seed, domainContent|uint64(i)))
	r := Request{Index: i, Endpoint: g.w.Endpoint, Model: g.pickModel(rng), Group: -1}
	if sp := g.w.SharedPrefix; sp != nil {
		r.Group = rng.IntN(sp.Groups)
		q := rng.IntN(sp.PromptsPerGroup)
		qrng := rand.New(rand.NewPCG(g.seed, domainQuestion|uint64(r.Group)<<24|uint64(q)))
		r.System = g.prefixes[r.Group]
		r.Prompt = fmt.Sprintf("Question %d: ", q) + text(qrng, max(0, sp.QuestionTokens*CharsPerToken-12))
	} else {
		n := g.w.Prompt.draw(rng) * CharsPerToken
		var b strings.Builder
		fmt.Fprintf(&b, "Request %d. ", i)
		writeText(&b, rng, max(0, n-b.Len()))
		r.Prompt = b.String()
	}
	r.PromptTokens = (len(r.System) + len(r.Prompt) + CharsPerToken - 1) / CharsPerToken
	r.MaxTokens = g.w.Output.draw(rng)
	return r
}

func (g *Generator) pickModel(rng *rand.Rand) string {
	u := rng.Float64()
	for _, a := range g.w.Adapters {
		if u < a.Share {
			return a.Name
		}
		u -= a.Share
	}
	return g.w.Model
}

// Generate returns the whole open-loop request sequence of w with seed, ordered by arrival time.
// For a trace workload it reads the trace's window (an error names the file, and the line of a
// bad record; ErrTraceMissing when the file does not exist).
func Generate(w *Workload, seed uint64) ([]Request, error) {
	if w.IsClosedLoop() {
		return nil, ErrClosedLoop
	}
	if w.Trace != nil {
		return generateTrace(w, seed)
	}
	type arrival struct {
		at     time.Duration
		region string
	}
	var all []arrival
	if w.Arrival != nil {
		for _, t := range arrivalTimes(rand.New(rand.NewPCG(seed, domainArrivals)), *w.Arrival, w.Duration) {
			all = append(all, arrival{at: t})
		}
	}
	for i, r := range w.Regions {
		rng := rand.New(rand.NewPCG(seed, domainArrivals|uint64(i+1)))
		for _, t := range arrivalTimes(rng, r.Arrival, w.Duration) {
			all = append(all, arrival{at: t, region: r.Name})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].at < all[j].at })
	g := NewGenerator(w, seed)
	reqs := make([]Request, len(all))
	for i, a := range all {
		reqs[i] = g.Request(i)
		reqs[i].At, reqs[i].Region = a.at, a.region
	}
	return reqs, nil
}
