package capmap

import (
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/switchyard-dev/switchyard/contract/promlabel"

	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
)

// Bounds of what a Recorder keeps.
const (
	// DefaultDecisions is the number of decisions a Recorder keeps by default.
	DefaultDecisions = 50
	// maxFlowRegions bounds the regions answers are counted for; the rest are counted under
	// promlabel.Other.
	maxFlowRegions = 64
	// maxNameBytes bounds a model, cluster or region name kept in a decision.
	maxNameBytes = 128
)

// Decision is one routed request as the map lists it.
type Decision struct {
	Time time.Time `json:"time"`
	// Model is "" for a model no fresh cluster lists.
	Model   string `json:"model"`
	Cluster string `json:"cluster"`
	Region  string `json:"region"`
	// Outcome is local, overflow, retry, or why the request was not answered.
	Outcome string `json:"outcome"`
	// Reason says why an overflow left the router's region.
	Reason string `json:"reason,omitempty"`
}

// Recorder keeps the front door's outcomes for the map: the last decisions (a ring) and the
// number of requests each region answered (the flows from this router). It implements
// frontdoor.OutcomeRecorder and is safe for concurrent use; memory is bounded by the ring's
// size and maxFlowRegions.
type Recorder struct {
	mu     sync.Mutex
	ring   []Decision
	next   int
	filled bool
	// answered counts answered requests by the region that answered them.
	answered map[string]uint64
}

var _ frontdoor.OutcomeRecorder = (*Recorder)(nil)

// NewRecorder returns a recorder that keeps the last size decisions (DefaultDecisions when
// size <= 0).
func NewRecorder(size int) *Recorder {
	if size <= 0 {
		size = DefaultDecisions
	}
	return &Recorder{ring: make([]Decision, size), answered: map[string]uint64{}}
}

// RecordOutcome records one request's outcome.
func (r *Recorder) RecordOutcome(o frontdoor.Outcome) {
	d := Decision{Time: o.Time, Model: bound(o.Model), Cluster: bound(o.Cluster), Region: bound(o.Region),
		Outcome: bound(o.Outcome), Reason: bound(o.LeftBecause.String())}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ring[r.next] = d
	r.next = (r.next + 1) % len(r.ring)
	r.filled = r.filled || r.next == 0
	if d.Region != "" {
		region := d.Region
		if _, ok := r.answered[region]; !ok && (len(r.answered) >= maxFlowRegions || !promlabel.Valid(region)) {
			region = promlabel.Other
		}
		r.answered[region]++
	}
}

// Decisions returns the decisions kept, newest first.
func (r *Recorder) Decisions() []Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.next
	if r.filled {
		n = len(r.ring)
	}
	out := make([]Decision, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, r.ring[(r.next-i+len(r.ring))%len(r.ring)])
	}
	return out
}

// Answered returns the requests answered so far by each region.
func (r *Recorder) Answered() map[string]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]uint64, len(r.answered))
	for k, v := range r.answered {
		out[k] = v
	}
	return out
}

// bound cuts s to maxNameBytes on a rune boundary and replaces invalid UTF-8.
func bound(s string) string {
	if len(s) > maxNameBytes {
		i := maxNameBytes
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]uint64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
