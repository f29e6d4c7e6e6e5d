package clustertable_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/gossip"
)

// signalling is a source that signals its changes, as gossip.Node does, and counts its reads.
type signalling struct {
	mu      sync.Mutex
	summary []gossip.Summary
	reads   int
	ch      chan struct{}
}

func (s *signalling) Snapshot() []gossip.Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	return slices.Clone(s.summary)
}

func (s *signalling) Subscribe() (<-chan struct{}, func()) { return s.ch, func() {} }

// set replaces the summaries and signals the change.
func (s *signalling) set(sums ...gossip.Summary) {
	s.mu.Lock()
	s.summary = sums
	s.mu.Unlock()
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

func (s *signalling) readCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// A source that signals its changes is read on the first view after a signal (not per view, and
// not sooner than IndexInterval after the last read), and at least once a second; between reads
// the summaries' ages move with the clock.
func TestIndexRebuiltOnChangeNotPerView(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	src := &signalling{ch: make(chan struct{}, 1)}
	src.set(summary("a", "r", "a-gw", "http://a", clk.t, false, model("llama", 4)))
	tb := clustertable.New(clustertable.Config{Region: "r", Now: clk.now, IndexInterval: 50 * time.Millisecond}, src, nil)

	steps := []struct {
		name      string
		advance   time.Duration
		change    bool
		wantReads int
		wantPods  int
		wantAge   time.Duration
	}{
		{"first view reads the source", 0, false, 1, 4, 0},
		{"views without a change do not", 10 * time.Millisecond, false, 1, 4, 10 * time.Millisecond},
		{"a change within the interval waits", 10 * time.Millisecond, true, 1, 4, 20 * time.Millisecond},
		{"a change after the interval is read", 40 * time.Millisecond, false, 2, 8, 0},
		{"no change for a second: read again", time.Second, false, 3, 8, 0},
	}
	for _, s := range steps {
		clk.t = clk.t.Add(s.advance)
		if s.change {
			src.set(summary("a", "r", "a-gw", "http://a", clk.t, false, model("llama", 8)))
		}
		for range 3 {
			v := tb.View("llama", nil)
			if len(v) != 1 {
				t.Fatalf("%s: view of %d clusters", s.name, len(v))
			}
			if got := src.readCount(); got != s.wantReads {
				t.Errorf("%s: %d snapshot reads, want %d", s.name, got, s.wantReads)
			}
			if v[0].Cluster.ReadyPods != s.wantPods {
				t.Errorf("%s: %d ready pods, want %d", s.name, v[0].Cluster.ReadyPods, s.wantPods)
			}
			// The source's ages are 0 at each read: an age of s.wantAge is the index's extrapolation.
			if s.wantReads == 1 && v[0].Age != s.wantAge {
				t.Errorf("%s: age %v, want %v", s.name, v[0].Age, s.wantAge)
			}
		}
	}
}

// A source that does not signal is compared per view: an in-place change is seen at once.
func TestIndexSeesUnsignalledChange(t *testing.T) {
	now := time.Unix(1000, 0)
	src := source{summary("a", "r", "a-gw", "http://a", now, false, model("llama", 4))}
	tb := clustertable.New(clustertable.Config{Region: "r", Now: func() time.Time { return now }}, src, nil)
	if v := tb.View("llama", nil); v[0].Cluster.Stale {
		t.Fatal("fresh cluster shown stale")
	}
	src[0].Stale = true
	if v := tb.View("llama", nil); !v[0].Cluster.Stale {
		t.Error("a summary turned stale in the source is not stale in the view")
	}
	src[0].Summary = summary("a", "r", "a-gw", "http://a", now, false, model("llama", 6)).Summary
	if v := tb.View("llama", nil); v[0].Cluster.ReadyPods != 6 {
		t.Errorf("%d ready pods after the summary changed, want 6", v[0].Cluster.ReadyPods)
	}
}

// Views while the source changes read whole indexes (run with -race).
func TestIndexConcurrentViews(t *testing.T) {
	src := &signalling{ch: make(chan struct{}, 1)}
	now := time.Now()
	src.set(summary("a", "r", "a-gw", "http://a", now, false, model("llama", 1)))
	tb := clustertable.New(clustertable.Config{Region: "r", IndexInterval: time.Microsecond}, src, nil)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				if g == 0 {
					src.set(summary("a", "r", "a-gw", "http://a", now, false, model("llama", uint32(1+i%8))))
					continue
				}
				v := tb.View("llama", nil)
				tb.Claim(v)
				if len(v) != 1 || v[0].Cluster.ReadyPods < 1 || v[0].Cluster.ReadyPods > 8 {
					t.Errorf("view %+v", v)
					return
				}
				tb.Release(v, 0)
			}
		})
	}
	wg.Wait()
}
