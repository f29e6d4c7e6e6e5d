package scheduling_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
)

// benchFleet returns n of the gateway's endpoints (datastore's, as the scheduler gets them in
// production) with varied load, all serving "m".
func benchFleet(n int) []framework.Endpoint {
	eps := make([]framework.Endpoint, n)
	for i := range eps {
		e := datastore.NewEndpoint(fmt.Sprintf("10.%d.%d.%d:8000", i/65536, (i/256)%256, i%256), "", "", nil)
		e.SetModels(&datastore.Models{Base: "m", FetchedAt: plugintest.Epoch})
		e.SetMetrics(
			&datastore.Metrics{WaitingQueue: i % 4, Running: 8 + i%16, KVUsage: float64(i%7) / 10, ScrapedAt: plugintest.Epoch},
		)
		eps[i] = e
	}
	return eps
}

// benchRequest is a 4,000-byte prompt (62 blocks) whose first half is shared with earlier requests.
func benchRequest(i int) *framework.Request {
	prompt := make([]byte, 4000)
	for j := range prompt {
		prompt[j] = byte('a' + j%26)
	}
	copy(prompt[2000:], fmt.Sprintf("question %d", i))
	return &framework.Request{
		Model:        "m",
		BaseModel:    "m",
		PromptTokens: 1000,
		PrefixHashes: prefix.Hashes(nil, "m", prompt, 0),
	}
}

func BenchmarkSchedule(b *testing.B) {
	for _, profile := range []string{"default", "gie-default"} {
		for _, n := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("%s/endpoints=%d", profile, n), func(b *testing.B) {
				h := plugintest.NewHandle(benchFleet(n)...)
				s := newScheduler(b, profile, h)
				reqs := make([]*framework.Request, 64)
				for i := range reqs {
					reqs[i] = benchRequest(i)
				}
				ctx := context.Background()
				for i := 0; i < 4*n; i++ { // warm the prefix index: the shared prefix is on many pods
					r := reqs[i%len(reqs)]
					res, _ := s.Schedule(ctx, r)
					s.PreRequest(ctx, r, res)
				}
				b.ReportAllocs()
				cpu0 := cpuTime()
				i := 0
				for b.Loop() {
					r := reqs[i%len(reqs)]
					i++
					res, err := s.Schedule(ctx, r)
					if err != nil {
						b.Fatal(err)
					}
					s.PreRequest(ctx, r, res)
				}
				// CPU time per decision: unlike ns/op it does not grow when the machine is shared.
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// cpuTime is the process's user+system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
