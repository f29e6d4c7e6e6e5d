package bench

import (
	"context"
	"sync"
	"time"
)

// kvSampleEvery is how often, in simulated time, the bench reads every pod's KV cache use to
// find its peak (PodStats.MaxKV).
const kvSampleEvery = 50 * time.Millisecond

// kvPeaks is the highest KV cache use (0..1) each pod of a stack showed while it was sampled.
type kvPeaks struct {
	mu   sync.Mutex
	peak []float64
	stop context.CancelFunc
	done chan struct{}
}

// sampleKV reads the KV use of st's pods every kvSampleEvery × timeScale of real time until
// the returned peaks are stopped.
func (st *stack) sampleKV(ctx context.Context, timeScale float64) *kvPeaks {
	ctx, cancel := context.WithCancel(ctx)
	servers := st.fleet.Servers()
	k := &kvPeaks{peak: make([]float64, len(servers)), stop: cancel, done: make(chan struct{})}
	every := max(time.Duration(float64(kvSampleEvery)*timeScale), time.Millisecond)
	go func() {
		defer close(k.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			for i, s := range servers {
				u := s.Snapshot().KVUsage()
				k.mu.Lock()
				k.peak[i] = max(k.peak[i], u)
				k.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return k
}

// finish stops the sampling and returns each pod's peak, in fleet order.
func (k *kvPeaks) finish() []float64 {
	k.stop()
	<-k.done
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]float64(nil), k.peak...)
}
