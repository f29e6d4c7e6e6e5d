// Package clustertabletest provides a gossip source for tests and benchmarks of the cluster
// table and its users.
package clustertabletest

import (
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/gossip"
)

// Republishing is a gossip source whose clusters publish a fresh summary every Interval, as
// gateways do (at most 4 a second): a copy of each summary with a new generation time, so the
// router's count of requests sent since a cluster's summary restarts at each one and a view sees
// each summary for a few thousand requests. Safe for concurrent use; set its fields before the
// first Snapshot.
type Republishing struct {
	// Interval is the time between two publications.
	Interval time.Duration
	// Summaries are the clusters' summaries (the first publication).
	Summaries []gossip.Summary

	mu sync.Mutex
	at time.Time
}

// Subscribe signals on the returned channel every Interval, when the next publication is due, as
// gossip.Node signals a summary applied: a cluster table over the source reads it then, not per
// request. The returned function stops the signals.
func (s *Republishing) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	t := time.NewTicker(s.Interval)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-t.C:
				select {
				case ch <- struct{}{}:
				default:
				}
			case <-done:
				t.Stop()
				return
			}
		}
	}()
	var once sync.Once
	return ch, func() { once.Do(func() { close(done) }) }
}

// Snapshot returns the clusters' summaries, publishing new ones when the interval has passed.
func (s *Republishing) Snapshot() []gossip.Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := time.Now(); now.Sub(s.at) >= s.Interval {
		s.at = now
		next := make([]gossip.Summary, len(s.Summaries))
		for i, sum := range s.Summaries {
			next[i] = sum
			next[i].Summary = proto.CloneOf(sum.Summary)
			next[i].Summary.GeneratedAtUnixNano = now.UnixNano()
		}
		s.Summaries = next
	}
	return s.Summaries
}
