package gossip_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/gossip"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

func TestChanged(t *testing.T) {
	base := testSummary(2, 2, 0, 10)
	tests := []struct {
		name   string
		modify func(s *gossipv1.CapacitySummary)
		want   bool
	}{
		{"identical", func(s *gossipv1.CapacitySummary) {}, false},
		{"free KV moves 1%", func(s *gossipv1.CapacitySummary) { s.Models[0].FreeKvTokens += s.Models[0].FreeKvTokens / 100 }, false},
		{"free KV moves 20%", func(s *gossipv1.CapacitySummary) { s.Models[0].FreeKvTokens /= 2 }, true},
		{"queue 0 to 1", func(s *gossipv1.CapacitySummary) { s.Models[1].QueueDepth += 5 }, true},
		{"saturated flips", func(s *gossipv1.CapacitySummary) { s.Models[1].Saturated = !s.Models[1].Saturated }, true},
		{"model added", func(s *gossipv1.CapacitySummary) { s.Models = append(s.Models, &gossipv1.ModelCapacity{Name: "x"}) }, true},
		{"adapter loaded elsewhere", func(s *gossipv1.CapacitySummary) { s.Models[0].Adapters[0].ResidentPods++ }, true},
		{"sketch only", func(s *gossipv1.CapacitySummary) { s.PrefixSketch = &gossipv1.PrefixSketch{NumBits: 8} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := proto.Clone(base).(*gossipv1.CapacitySummary)
			tt.modify(next)
			if got := gossip.Changed(base, next, 0.05); got != tt.want {
				t.Errorf("Changed = %v, want %v", got, tt.want)
			}
		})
	}
}

type recorder struct {
	mu   sync.Mutex
	sent []*gossipv1.CapacitySummary
	err  error
}

func (r *recorder) Publish(s *gossipv1.CapacitySummary) (*gossipv1.CapacitySummary, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, s)
	return s, r.err
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sent)
}

func TestPublisherThrottlesAndHeartbeats(t *testing.T) {
	var load atomic.Uint32
	rec := &recorder{}
	cfg := gossip.PublisherConfig{Interval: 10 * time.Millisecond, Heartbeat: 200 * time.Millisecond, Threshold: 0.05}
	p, err := gossip.NewPublisher(rec, func() *gossipv1.CapacitySummary { return testSummary(1, 1, 0, load.Load()) }, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	time.Sleep(500 * time.Millisecond) // steady: first publication plus heartbeats only
	steady := rec.count()
	if steady < 1 || steady > 5 {
		t.Errorf("%d publications of an unchanged summary in 500 ms with a 200 ms heartbeat", steady)
	}
	load.Store(1000) // a large change is published at the next poll
	deadline := time.Now().Add(5 * time.Second)
	for rec.count() == steady && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if rec.count() == steady {
		t.Error("a large change was not published")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestPublisherStopsOnError(t *testing.T) {
	rec := &recorder{err: errors.New("boom")}
	p, err := gossip.NewPublisher(rec, func() *gossipv1.CapacitySummary { return testSummary(1, 1, 0, 1) },
		gossip.PublisherConfig{Interval: time.Millisecond, Heartbeat: time.Millisecond, Threshold: 0})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err == nil {
		t.Fatal("Run ignored a publish error")
	}
	if _, err := gossip.NewPublisher(rec, nil, gossip.DefaultPublisherConfig()); err == nil {
		t.Error("nil source accepted")
	}
	if err := (gossip.PublisherConfig{Interval: time.Second, Heartbeat: time.Millisecond}).Validate(); err == nil {
		t.Error("heartbeat below interval accepted")
	}
}
