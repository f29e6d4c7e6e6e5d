package datastore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
)

func fleetSpecs(n int) []datastore.EndpointSpec {
	specs := make([]datastore.EndpointSpec, n)
	for i := range specs {
		specs[i] = datastore.EndpointSpec{Address: fmt.Sprintf("10.0.%d.%d:8000", i/256, i%256)}
	}
	return specs
}

// BenchmarkEndpointsScan is the scheduler's read path: snapshot, then per-endpoint health and
// staleness checks over 1,000 endpoints.
func BenchmarkEndpointsScan(b *testing.B) {
	s := datastore.NewStore(nil, nil)
	s.Sync(fleetSpecs(1000))
	now := time.Now()
	for _, ep := range s.Endpoints() {
		ep.SetMetrics(&datastore.Metrics{ScrapedAt: now})
	}
	b.ReportAllocs()
	for b.Loop() {
		usable := 0
		for _, ep := range s.Endpoints() {
			if !ep.Ejected(now) && !ep.Stale(now, 2*time.Second) {
				usable++
			}
		}
		if usable != 1000 {
			b.Fatal(usable)
		}
	}
}

// BenchmarkObserveResult is the proxy's per-request health report.
func BenchmarkObserveResult(b *testing.B) {
	ep := datastore.NewEndpoint("a:1", "", "", nil)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		ep.ObserveResult(200, nil, now)
	}
}

// BenchmarkSync replaces a 1,000-endpoint set with one that differs by one endpoint.
func BenchmarkSync(b *testing.B) {
	s := datastore.NewStore(nil, nil)
	a, c := fleetSpecs(1000), fleetSpecs(1001)[1:]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			s.Sync(a)
		} else {
			s.Sync(c)
		}
	}
}
