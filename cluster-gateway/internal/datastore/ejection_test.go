package datastore_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
)

func TestMaxEjected(t *testing.T) {
	tests := []struct{ n, percent, want int }{
		{0, 50, 0},
		{1, 50, 0}, // a lone pod is never ejected: that would empty the pool
		{1, 100, 1},
		{2, 50, 1},
		{2, 10, 1}, // at least one of two or more
		{3, 50, 1},
		{4, 50, 2},
		{5, 50, 2},
		{10, 10, 1},
		{10, 0, 0},
		{10, 100, 10},
		{10, 150, 10}, // clamped
		{10, -5, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d pods at %d%%", tt.n, tt.percent), func(t *testing.T) {
			if got := datastore.MaxEjected(tt.n, tt.percent); got != tt.want {
				t.Fatalf("MaxEjected(%d, %d) = %d, want %d", tt.n, tt.percent, got, tt.want)
			}
		})
	}
}

// newPool returns a store of n endpoints with the given options.
func newPool(t *testing.T, n int, reg prometheus.Registerer, opts ...datastore.StoreOption) *datastore.Store {
	t.Helper()
	s := datastore.NewStore(nil, reg, opts...)
	specs := make([]datastore.EndpointSpec, n)
	for i := range specs {
		specs[i].Address = fmt.Sprintf("10.0.0.%d:8000", i+1)
	}
	s.Sync(specs)
	return s
}

func ejectedCount(s *datastore.Store, now time.Time) int {
	n := 0
	for _, ep := range s.Endpoints() {
		if ep.Ejected(now) {
			n++
		}
	}
	return n
}

// When every pod of the pool fails, at most the configured share of them is ejected; the
// refusals are counted, and the others stay in rotation.
func TestEjectionCap(t *testing.T) {
	tests := []struct {
		name        string
		pods        int
		opts        []datastore.StoreOption
		wantEjected int
	}{
		{"default 50% of 4", 4, nil, 2},
		{"default 50% of 2 still ejects one", 2, nil, 1},
		{"a lone pod stays", 1, nil, 0},
		{"25% of 8", 8, []datastore.StoreOption{datastore.WithMaxEjectionPercent(25)}, 2},
		{"100% ejects all", 3, []datastore.StoreOption{datastore.WithMaxEjectionPercent(100)}, 3},
		{"0% ejects none", 3, []datastore.StoreOption{datastore.WithMaxEjectionPercent(0)}, 0},
	}
	now := time.Unix(1000, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			s := newPool(t, tt.pods, reg, tt.opts...)
			for range 3 { // every pod fails again and again
				for _, ep := range s.Endpoints() {
					observe(ep, now, 500, 500, 500, 500, 500)
				}
			}
			if got := ejectedCount(s, now); got != tt.wantEjected {
				t.Fatalf("%d of %d pods ejected, want %d", got, tt.pods, tt.wantEjected)
			}
			// The first round ejects wantEjected pods and refuses each other pod once; the
			// next two refuse every failure that finds an ejection due (the pods kept in
			// rotation have five failures more in a row each time).
			refused := counterValue(t, reg, "switchyard_gateway_endpoint_ejections_refused_total")
			if kept := tt.pods - tt.wantEjected; (kept == 0) != (refused == 0) || refused < float64(kept) {
				t.Fatalf("refused ejections = %v with %d pods kept in rotation", refused, kept)
			}
		})
	}
}

// A pod refused ejection because the cap was reached is ejected once a slot frees: its failures
// were kept.
func TestEjectionAfterASlotFrees(t *testing.T) {
	s := newPool(t, 2, nil)
	a, b := s.Endpoints()[0], s.Endpoints()[1]
	now := time.Unix(1000, 0)
	observe(a, now, 500, 500, 500, 500, 500)
	observe(b, now, 500, 500, 500, 500, 500)
	if !a.Ejected(now) || b.Ejected(now) {
		t.Fatalf("ejected a=%v b=%v, want a only (one of two)", a.Ejected(now), b.Ejected(now))
	}
	later := now.Add(datastore.EjectionBase + time.Millisecond) // a's ejection is over
	observe(b, later, 500)
	if !b.Ejected(later) {
		t.Fatal("b not ejected once a's ejection ended")
	}
	if a.Ejected(later) {
		t.Fatal("a ejected again without failing")
	}
}

// Pods failing concurrently never push the pool past its cap.
func TestEjectionCapUnderConcurrency(t *testing.T) {
	s := newPool(t, 10, nil)
	now := time.Unix(1000, 0)
	var wg sync.WaitGroup
	for _, ep := range s.Endpoints() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				ep.ObserveResult(0, errTest, now)
			}
		}()
	}
	wg.Wait()
	if got := ejectedCount(s, now); got != 5 {
		t.Fatalf("%d of 10 pods ejected, want exactly 5 (50%%)", got)
	}
}

// counterValue is the value of the unlabelled counter name registered on reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no counter %s", name)
	return 0
}
