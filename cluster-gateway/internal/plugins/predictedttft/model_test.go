package predictedttft

import (
	"math"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
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
		// No batch-ITL slope is known before the pod's own responses at varied batch sizes.
		{"running batch, no slope measured", 0, 64, 0, 1000, 0, 0, 0.005 + 0.020 + 0.1},
		{"in flight beyond the scrape", 1, 2, 6, 1000, 0, 4, 0.005 + 4*0.1 + 0.020 + 0.1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := plugintest.NewEndpoint("e")
			e.SetMetrics(&framework.Metrics{WaitingQueue: tt.waiting, Running: tt.running, ScrapedAt: at})
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
		m       *framework.Metrics
		want    float64
	}{
		{"base model", "", &framework.Metrics{}, 0},
		{"active", "a", &framework.Metrics{ActiveAdapters: []string{"a"}, MaxLoRA: 1}, 0},
		{"free slot", "a", &framework.Metrics{ActiveAdapters: []string{"b"}, MaxLoRA: 2}, 0.1},
		{
			"slots full",
			"a",
			&framework.Metrics{ActiveAdapters: []string{"b"}, WaitingAdapters: []string{"c"}, MaxLoRA: 2},
			0.2,
		},
	}
	for _, tt := range tests {
		if got := s.adapterWait(tt.adapter, tt.m); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRemaining(t *testing.T) {
	at := time.Unix(100, 0)
	tests := []struct {
		name                 string
		busySince, lastFirst time.Duration // before at; 0 = never
		tokens, n, rate      float64
		want                 float64
	}{
		{"just sent", 0, -1, 4000, 1, 8000, 4000},
		{"half way", 250 * time.Millisecond, -1, 4000, 1, 8000, 2000},
		{"since the last first token", time.Second, 250 * time.Millisecond, 4000, 1, 8000, 2000},
		{"overdue keeps a tenth", 5 * time.Second, -1, 4000, 1, 8000, 400},
		{"the oldest of two is not done", 375 * time.Millisecond, -1, 4000, 2, 8000, 2000},
		{"the oldest of four is not done", 5 * time.Second, -1, 4000, 4, 8000, 3000},
		{"no rate", time.Second, -1, 4000, 1, 0, 4000},
		{"empty", time.Second, -1, 0, 0, 8000, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPod()
			p.busySince.Store(at.Add(-tt.busySince).UnixNano())
			if tt.lastFirst >= 0 {
				p.lastFirst.Store(at.Add(-tt.lastFirst).UnixNano())
			}
			if got := p.remaining(tt.tokens, tt.n, tt.rate, at); math.Abs(got-tt.want) > 1e-6 {
				t.Fatalf("remaining = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDrainRate(t *testing.T) {
	p := newPod()
	t0 := time.Unix(100, 0)
	// Requests of 1,000 tokens sent together; first tokens every 125ms: 8,000 tokens/s.
	for i := range minDrainSamples + 1 {
		busy := p.firstToken(t0, t0.Add(time.Duration(i+1)*125*time.Millisecond))
		if busy != 125*time.Millisecond {
			t.Fatalf("request %d: busy %v, want 125ms (since the previous first token)", i, busy)
		}
		if i < minDrainSamples && p.snap.Load().drainRate() != 0 {
			t.Fatalf("drain rate trusted after %d samples", i)
		}
		p.drained(1000, busy)
	}
	if got := p.snap.Load().drainRate(); math.Abs(got-8000) > 1e-6 {
		t.Fatalf("drain rate %v, want 8000", got)
	}
	// A request sent after the pod went idle is timed from its dispatch, and a first token
	// reported out of order is timed as taking no time.
	sent := t0.Add(2 * time.Second)
	if busy := p.firstToken(sent, sent.Add(300*time.Millisecond)); busy != 300*time.Millisecond {
		t.Fatalf("busy %v, want 300ms from dispatch", busy)
	}
	if busy := p.firstToken(t0, sent); busy != 0 {
		t.Fatalf("busy %v for an out-of-order first token, want 0", busy)
	}
}

// The step-time slope is fitted to the pod's own (batch, ITL) observations, whatever shape the
// engine's step time has: a pod whose ITL grows from 8 to 15 ms between batch 1 and 64 and one
// whose ITL barely moves (9.1 to 9.5 ms) each get their own step at batch 64.
func TestStepFollowsObservedBatchSlope(t *testing.T) {
	tests := []struct {
		name          string
		itl           func(batch float64) float64 // seconds
		batches       []float64
		at            int
		want          float64 // seconds; 0: the learned ITL
		wantFlatSlope bool
	}{
		{
			"steep: ITL 8→15 ms over 64",
			func(b float64) float64 { return 0.008 + 0.007*(b-1)/63 },
			[]float64{1, 8, 16, 32, 48, 64},
			64,
			0.015,
			false,
		},
		{
			"nearly flat: 6 µs per request",
			func(b float64) float64 { return 0.0091 + 6e-6*b },
			[]float64{1, 8, 16, 32, 48, 64},
			64,
			0.0091 + 64*6e-6,
			false,
		},
		{"never varied: the learned ITL", func(b float64) float64 { return 0.012 }, []float64{30, 30.5, 30}, 64, 0, true},
		{
			"decreasing: no negative slope",
			func(b float64) float64 { return 0.020 - 0.0002*b },
			[]float64{1, 16, 32, 64},
			0,
			0,
			true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPod()
			for i := range 60 {
				b := tt.batches[i%len(tt.batches)]
				p.learn(0.2, 0, 1, tt.itl(b), b, 1000)
			}
			sp := p.snap.Load()
			slope, _ := sp.itlSlope()
			if tt.wantFlatSlope != (slope == 0) {
				t.Fatalf("slope %v, want flat %v", slope, tt.wantFlatSlope)
			}
			want := tt.want
			if want == 0 {
				want = sp.itl
			}
			if got := sp.step(tt.at); math.Abs(got-want) > 0.06*want {
				t.Fatalf("step at batch %d = %.5fs, want %.5fs (within 6%%)", tt.at, got, want)
			}
		})
	}
}

// Responses whose batch is unknown (no scrape yet) teach the ITL but not the slope.
func TestStepSlopeNeedsKnownBatch(t *testing.T) {
	p := newPod()
	for i := range 40 {
		p.learn(0.2, 0, 1, 0.010+0.001*float64(i%5), -1, 1000)
	}
	sp := p.snap.Load()
	if slope, _ := sp.itlSlope(); slope != 0 || sp.nFit != 0 || sp.nITL != 40 {
		t.Fatalf("slope %v from %d fitted samples (%d ITL samples), want none fitted", slope, sp.nFit, sp.nITL)
	}
}

func TestDecodeBatch(t *testing.T) {
	tests := []struct{ first, end, want float64 }{
		{10, 20, 15}, {10, -1, 10}, {-1, 20, 20}, {-1, -1, -1}, {0, 0, 0},
	}
	for _, tt := range tests {
		if got := decodeBatch(tt.first, tt.end); got != tt.want {
			t.Errorf("decodeBatch(%v, %v) = %v, want %v", tt.first, tt.end, got, tt.want)
		}
	}
}
