package frontdoor_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable/clustertabletest"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
	"github.com/switchyard-dev/switchyard/gossip/sketch"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// scaleRegions are the regions of the at-scale benchmarks' clusters; the router is in the first.
var scaleRegions = []string{"us-east-1", "us-west-2", "eu-west-1"}

// scaleSource returns n clusters spread round-robin over scaleRegions, each serving `models`
// models ("llama" first, then "model-01"...) with 1,024-hash prefix sketches on "llama" (half
// of them holding the whole benchmark prompt), republished every 250 ms. url(i) is cluster i's
// gateway URL.
func scaleSource(b *testing.B, n, models int, url func(i int) string) *clustertabletest.Republishing {
	b.Helper()
	hashes := prefix.Hashes(nil, "llama", []byte(benchPrompt), 0)
	s := &clustertabletest.Republishing{Interval: 250 * time.Millisecond}
	for i := range n {
		bl, err := sketch.NewForCapacity(1024, 0.02, uint64(i))
		if err != nil {
			b.Fatal(err)
		}
		for j, h := range hashes {
			if j < 8 || i%2 == 0 {
				bl.Add(h)
			}
		}
		name, region := fmt.Sprintf("c%04d", i), scaleRegions[i%len(scaleRegions)]
		sum := &gossipv1.CapacitySummary{Cluster: name, Region: region, GatewayUrl: url(i)}
		for m := range models {
			total := uint64(1_000_000)
			mc := &gossipv1.ModelCapacity{
				Name: fmt.Sprintf("model-%02d", m), ReadyPods: uint32(4 + i%8), TotalKvTokens: total,
				FreeKvTokens: total * uint64(3+i%6) / 10, QueueDepth: uint32(i % 3),
				PredictedTtftMs: float32(40 + i%50), PrefillTokensPerSecond: 160_000,
			}
			if m == 0 {
				mc.Name, mc.PrefixSketch = "llama", bl.Proto()
			}
			sum.Models = append(sum.Models, mc)
		}
		s.Summaries = append(s.Summaries, gossip.Summary{
			Node: name + "-gw", Cluster: name, Region: region, State: gossip.StateAlive, Summary: sum,
		})
	}
	return s
}

// scaleTable is a us-east-1 router's cluster table over src.
func scaleTable(src clustertable.Source) *clustertable.Table {
	return clustertable.New(clustertable.Config{Region: scaleRegions[0], RTT: map[string]time.Duration{
		"us-west-2": 70 * time.Millisecond,
		"eu-west-1": 80 * time.Millisecond,
	}}, src, nil)
}

// BenchmarkRouteAtScale is the router's whole per-request work with no network, as
// BenchmarkServeInference, over N clusters × M models: body, prefix hashes, the cluster table's
// view (every cluster serving the model is a candidate), the routing decision and the forward
// targets. Besides ns/op (the mean) it reports the p50 and p99 of single requests, the CPU per
// 1,000 requests, the heap the table, its source and their decoded sketches hold and the share
// of the decisions made over a subset of the clusters (clustertable.Route). The
// gossip node's Snapshot, which the router's table reads per request, is measured on a real
// pool by tests/cmd/scale (docs/scale.md) and is not included here: the source hands back its
// slice as it is.
func BenchmarkRouteAtScale(b *testing.B) {
	for _, n := range []int{100, 300, 1000} {
		for _, models := range []int{1, 10} {
			b.Run(fmt.Sprintf("clusters=%d/models=%d", n, models), func(b *testing.B) {
				before := liveHeap()
				table := scaleTable(scaleSource(b, n, models, func(int) string { return "http://127.0.0.1:1" }))
				h := benchFrontDoor(table, answerAtOnce{table}).Handler()
				body := strings.NewReader(benchBody)
				r := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
				w := &discardWriter{h: http.Header{}}
				serve := func() time.Duration {
					body.Reset(benchBody)
					r.Body, r.ContentLength = readCloser{body}, int64(len(benchBody))
					clear(w.h)
					w.status = 0
					start := time.Now()
					h.ServeHTTP(w, r)
					d := time.Since(start)
					if w.status != http.StatusOK {
						b.Fatalf("status %d", w.status)
					}
					return d
				}
				serve() // decode the sketches once, as the table's cache holds them
				heap := liveHeap() - min(before, liveHeap())
				times := make([]time.Duration, 0, 1<<16)
				b.ReportAllocs()
				b.ResetTimer()
				cpu := cpuTime()
				for b.Loop() {
					times = append(times, serve())
				}
				cpu = cpuTime() - cpu
				b.StopTimer()
				slices.Sort(times)
				b.ReportMetric(usec(quantile(times, 0.50)), "p50-us")
				b.ReportMetric(usec(quantile(times, 0.99)), "p99-us")
				b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(len(times))*1000, "cpu-ms/1000req")
				b.ReportMetric(float64(heap)/(1<<20), "table-MiB")
				if reduced, full := table.DecisionPaths(); reduced+full > 0 {
					b.ReportMetric(100*float64(reduced)/float64(reduced+full), "reduced-%")
				}
			})
		}
	}
}

// readCloser gives a strings.Reader a no-op Close.
type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
