package publish_test

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/predictedttft"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/publish"
	"github.com/switchyard-dev/switchyard/gossip"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// The gateway's components satisfy the publisher's interfaces.
var (
	_ publish.Sink          = (*gossip.Node)(nil)
	_ publish.View          = datastore.View{}
	_ publish.TTFTPredictor = (*predictedttft.Scorer)(nil)
)

// epoch is the fake clock's start.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// clock is a manual clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: epoch} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// recordingSink keeps every summary published; it fails while err is set.
type recordingSink struct {
	mu   sync.Mutex
	got  []*gossipv1.CapacitySummary
	fail error
}

func (s *recordingSink) Publish(sum *gossipv1.CapacitySummary) (*gossipv1.CapacitySummary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	s.got = append(s.got, sum)
	return sum, nil
}

func (s *recordingSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

func (s *recordingSink) setFail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

var errRefused = errors.New("refused")

// podSpec describes one endpoint of a test view.
type podSpec struct {
	base     string
	adapters []string // from /v1/models
	m        datastore.Metrics
	age      time.Duration // metrics age at the clock's now
	failing  bool          // last scrape failed
	ejected  bool          // ejected by passive health
}

// kv returns metrics with queue, running, KV use and 100 blocks of 16 tokens (1,600 tokens).
func kv(queue, running int, usage float64) datastore.Metrics {
	return datastore.Metrics{WaitingQueue: queue, Running: running, KVUsage: usage, KVBlockSize: 16, KVTotalBlocks: 100}
}

// newView returns a store holding one endpoint per spec, named 10.0.0.N:8000 in order.
func newView(t testing.TB, now time.Time, specs ...podSpec) *datastore.Store {
	t.Helper()
	s := datastore.NewStore(nil, nil)
	var eps []datastore.EndpointSpec
	for i := range specs {
		eps = append(eps, datastore.EndpointSpec{Address: addr(i)})
	}
	s.Sync(eps)
	for i, sp := range specs {
		setPod(s.Get(addr(i)), sp, now)
	}
	return s
}

func addr(i int) string { return fmt.Sprintf("10.0.%d.%d:8000", i/250, i%250+1) }

// setPod stores a spec's models and metrics on e.
func setPod(e *datastore.Endpoint, sp podSpec, now time.Time) {
	if sp.base != "" {
		e.SetModels(&datastore.Models{Base: sp.base, Adapters: sp.adapters, FetchedAt: now})
	}
	m := sp.m
	m.ScrapedAt = now.Add(-sp.age)
	e.SetMetrics(&m)
	if sp.failing {
		e.RecordScrapeFailure()
	}
	if sp.ejected {
		for range datastore.HealthConsecutiveFailures {
			e.ObserveResult(500, nil, now)
		}
	}
}

// testConfig is DefaultConfig with a long staleness limit, so a fake clock moving seconds ahead
// does not turn pods stale unless a test says so.
func testConfig() publish.Config {
	c := publish.DefaultConfig()
	c.Saturation.Staleness = time.Minute
	return c
}

// figures is a model's capacity with floats rounded, for comparison.
type figures struct {
	Name                  string
	Ready                 uint32
	TotalKV, FreeKV       uint64
	Queue, Running        uint32
	Saturation            float64
	Saturated             bool
	TTFTms, MeanTTFTms    float64
	PrefillTPS, DecodeTPS float64
	Adapters              string
}

func figuresOf(mc *gossipv1.ModelCapacity) figures {
	r := func(v float32) float64 { return math.Round(float64(v)*100) / 100 }
	f := figures{
		Name:       mc.GetName(),
		Ready:      mc.GetReadyPods(),
		TotalKV:    mc.GetTotalKvTokens(),
		FreeKV:     mc.GetFreeKvTokens(),
		Queue:      mc.GetQueueDepth(),
		Running:    mc.GetRunning(),
		Saturation: r(mc.GetSaturation()),
		Saturated:  mc.GetSaturated(),
		TTFTms: r(
			mc.GetPredictedTtftMs(),
		),
		MeanTTFTms: r(mc.GetMeanPredictedTtftMs()),
		PrefillTPS: r(mc.GetPrefillTokensPerSecond()),
		DecodeTPS:  r(mc.GetDecodeTokensPerSecond()),
	}
	for _, a := range mc.GetAdapters() {
		f.Adapters += fmt.Sprintf("%s:r%d/q%d/x%d ", a.GetName(), a.GetResidentPods(), a.GetQueueDepth(), a.GetRunning())
	}
	return f
}
