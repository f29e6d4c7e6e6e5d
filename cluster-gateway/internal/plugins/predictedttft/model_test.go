package predictedttft

import (
	"math"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
)

func TestEstimate(t *testing.T) {
	s := New("p", DefaultConfig(), time.Now) // prior: 10,000 tokens/s, ITL 20ms, overhead 5ms
	prior := s.prior.Load()
	at := time.Unix(100, 0)
	tests := []struct {
		name                       string
		waiting, running, inFlight int
		prompt, cached             int
		wantAhead                  float64
		wantTotal                  float64 // seconds
	}{
		{"idle", 0, 0, 0, 1000, 0, 0, 0.005 + 0.020 + 0.1},
		{"cached prefix", 0, 0, 0, 1000, 800, 0, 0.005 + 0.020 + 0.02},
		{"queue ahead", 2, 0, 0, 1000, 0, 2, 0.005 + 2*0.1 + 0.020 + 0.1},
		{"running batch slows steps", 0, 64, 0, 1000, 0, 0, 0.005 + 0.040 + 0.1},
		{"in flight beyond the scrape", 1, 2, 6, 1000, 0, 4, 0.005 + 4*0.1 + 0.020*(1+2.0/64) + 0.1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := datastore.NewEndpoint("e", "", "", nil)
			e.SetMetrics(&datastore.Metrics{WaitingQueue: tt.waiting, Running: tt.running, ScrapedAt: at})
			e.AddInFlight(int64(tt.inFlight))
			est := s.estimate(e, nil, prior, request{prompt: tt.prompt, cached: tt.cached})
			if est.Ahead != tt.wantAhead || math.Abs(est.Total-tt.wantTotal) > 1e-9 {
				t.Fatalf("estimate %+v, want ahead %v total %v", est, tt.wantAhead, tt.wantTotal)
			}
		})
	}
}

func TestSentSince(t *testing.T) {
	p := newPod()
	base := time.Unix(100, 0)
	for i := range 40 {
		p.dispatched(base.Add(time.Duration(i) * time.Millisecond))
	}
	tests := []struct {
		since time.Time
		want  int
	}{
		{base.Add(39 * time.Millisecond), 0},
		{base.Add(35 * time.Millisecond), 4},
		{base.Add(-time.Second), dispatchRing},
	}
	for _, tt := range tests {
		if got := p.sentSince(tt.since); got != tt.want {
			t.Errorf("sentSince(%v) = %d, want %d", tt.since.Sub(base), got, tt.want)
		}
	}
}

func TestAdapterWait(t *testing.T) {
	s := New("p", DefaultConfig(), time.Now)
	tests := []struct {
		name    string
		adapter string
		m       *datastore.Metrics
		want    float64
	}{
		{"base model", "", &datastore.Metrics{}, 0},
		{"active", "a", &datastore.Metrics{ActiveAdapters: []string{"a"}, MaxLoRA: 1}, 0},
		{"free slot", "a", &datastore.Metrics{ActiveAdapters: []string{"b"}, MaxLoRA: 2}, 0.1},
		{"slots full", "a", &datastore.Metrics{ActiveAdapters: []string{"b"}, WaitingAdapters: []string{"c"}, MaxLoRA: 2}, 0.2},
	}
	for _, tt := range tests {
		if got := s.adapterWait(tt.adapter, tt.m); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
