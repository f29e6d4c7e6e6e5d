package predictedttft

import (
	"math"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

func TestPredictLatency(t *testing.T) {
	at := time.Unix(100, 0)
	steep := func(b float64) float64 { return 0.008 + 0.0002*b } // 8 ms + 0.2 ms per running request
	tests := []struct {
		name              string
		learn             bool
		waiting, running  int
		inFlight          int
		wantTTFT, wantITL float64 // seconds
	}{
		{"prior, idle", false, 0, 0, 0, 0.005 + 0.020 + 0.1, 0.020},
		{"prior, busy: no slope without samples", false, 0, 40, 0, 0.005 + 0.020 + 0.1, 0.020},
		{"learned slope, idle: one request in the batch", true, 0, 0, 0, 0, steep(1)},
		{"learned slope, 40 running and 9 waiting join", true, 9, 40, 0, 0, steep(50)},
		{"learned slope, in flight beyond the scrape", true, 0, 2, 30, 0, steep(31)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New("p", DefaultConfig(), func() time.Time { return at })
			e := plugintest.NewEndpoint("e")
			if tt.learn {
				st := s.podFor(e)
				for i := range 60 {
					b := float64([]int{1, 8, 16, 32, 48, 64}[i%6])
					st.learn(0.2, 0, 1, steep(b), b, 1000)
				}
			}
			e.SetMetrics(&framework.Metrics{WaitingQueue: tt.waiting, Running: tt.running, ScrapedAt: at})
			e.AddInFlight(int64(tt.inFlight))
			ttft, tpot := s.PredictLatency(e, 1000, 0)
			if want := s.Predict(e, 1000, 0); ttft != want {
				t.Fatalf("TTFT %v, want Predict's %v", ttft, want)
			}
			if tt.wantTTFT > 0 && math.Abs(ttft.Seconds()-tt.wantTTFT) > 1e-6 {
				t.Fatalf("TTFT %v, want %.4fs", ttft, tt.wantTTFT)
			}
			// Within 1 ms: the learned ITL is a log-space average, a little above the fit's mean;
			// the cases' batches are 4 ms or more apart on the slope.
			if got := tpot.Seconds(); math.Abs(got-tt.wantITL) > 0.001 {
				t.Fatalf("TPOT %v, want %.5fs (within 1 ms)", tpot, tt.wantITL)
			}
		})
	}
}
