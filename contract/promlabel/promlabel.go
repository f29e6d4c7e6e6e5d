// Package promlabel keeps the values of Prometheus labels inside bounded sets. A label whose
// values come from outside the process (a client's model name, a request path, a priority
// header, a pod's answer, a cluster name from gossip) would otherwise grow one series per
// distinct value for as long as the process lives, and a value that is not valid UTF-8 makes
// client_golang panic (WithLabelValues) or fail the scrape. Both tiers use it, so `other` means
// the same in every Switchyard metric. Every such value goes through Clean, or through a Set,
// which also caps how many distinct values one label may take; a value that does not fit is
// counted under Other.
package promlabel

import (
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Other is the label value that stands for every value a label may not carry: unknown, not
// valid UTF-8, too long, or beyond its label's cap.
const Other = "other"

// MaxLen is the longest label value kept, in bytes.
const MaxLen = 128

// DefaultLimit is the cap on distinct values of a label fed from outside (e.g. model names).
const DefaultLimit = 500

// Valid reports whether v may be a label value as it is: not empty, at most MaxLen bytes and
// valid UTF-8.
func Valid(v string) bool {
	return v != "" && len(v) <= MaxLen && utf8.ValidString(v)
}

// Clean returns v when it is Valid, else Other.
func Clean(v string) string {
	if Valid(v) {
		return v
	}
	return Other
}

// Set is the bounded vocabulary of one label: it admits Valid values until it holds Limit of
// them and maps every other value to Other. A value once admitted stays admitted (its series
// lives on), and once the Set is full it stays full, so a value maps to the same label value
// every time. Reads take no lock. Safe for concurrent use.
type Set struct {
	limit int
	mu    sync.Mutex                        // serialises admissions
	vals  atomic.Pointer[map[string]string] // copied on write: at most limit admissions ever
}

// NewSet returns a Set admitting up to limit values (DefaultLimit when limit ≤ 0), beginning
// with preset (configured values, always admitted when Valid, even past limit).
func NewSet(limit int, preset ...string) *Set {
	if limit <= 0 {
		limit = DefaultLimit
	}
	m := make(map[string]string, len(preset))
	for _, v := range preset {
		if Valid(v) && v != Other {
			m[v] = v
		}
	}
	s := &Set{limit: max(limit, len(m))}
	s.vals.Store(&m)
	return s
}

// Value returns v when the Set holds it or can still admit it (admitting it), else Other.
func (s *Set) Value(v string) string {
	if got, ok := (*s.vals.Load())[v]; ok {
		return got
	}
	if !Valid(v) || v == Other {
		return Other
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := *s.vals.Load()
	if got, ok := cur[v]; ok {
		return got
	}
	if len(cur) >= s.limit {
		return Other
	}
	next := make(map[string]string, len(cur)+1)
	for k, x := range cur {
		next[k] = x
	}
	v = strings.Clone(v) // its own copy: v may alias a request body
	next[v] = v
	s.vals.Store(&next)
	return v
}

// Len is the number of values admitted.
func (s *Set) Len() int { return len(*s.vals.Load()) }
