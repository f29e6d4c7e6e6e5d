package datastore_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

func addrs(eps []*datastore.Endpoint) []string {
	out := make([]string, len(eps))
	for i, ep := range eps {
		out[i] = ep.Address
	}
	return out
}

func TestStoreSync(t *testing.T) {
	tests := []struct {
		name        string
		first, next []datastore.EndpointSpec
		want        []string
		wantRemoved []string
		wantKept    []string // addresses whose *Endpoint survives the second Sync
	}{
		{
			name:        "add and remove",
			first:       []datastore.EndpointSpec{{Address: "10.0.0.1:80"}, {Address: "10.0.0.2:80"}},
			next:        []datastore.EndpointSpec{{Address: "10.0.0.2:80"}, {Address: "10.0.0.3:80"}},
			want:        []string{"10.0.0.2:80", "10.0.0.3:80"},
			wantRemoved: []string{"10.0.0.1:80"},
			wantKept:    []string{"10.0.0.2:80"},
		},
		{
			name:     "sorted and deduplicated, empty address ignored",
			next:     []datastore.EndpointSpec{{Address: "b:1"}, {Address: "a:1"}, {Address: ""}, {Address: "a:1"}},
			want:     []string{"a:1", "b:1"},
			wantKept: nil,
		},
		{
			name:     "identity change replaces endpoint without removal",
			first:    []datastore.EndpointSpec{{Address: "a:1", Engine: datastore.EngineVLLM}},
			next:     []datastore.EndpointSpec{{Address: "a:1", Engine: datastore.EngineSGLang}},
			want:     []string{"a:1"},
			wantKept: nil,
		},
		{
			name:  "defaults count as same identity",
			first: []datastore.EndpointSpec{{Address: "a:1"}},
			next: []datastore.EndpointSpec{
				{Address: "a:1", Name: datastore.OpaqueName("a:1"), Engine: datastore.EngineVLLM},
			},
			want:     []string{"a:1"},
			wantKept: []string{"a:1"},
		},
		{
			name:        "empty set",
			first:       []datastore.EndpointSpec{{Address: "a:1"}},
			next:        nil,
			want:        []string{},
			wantRemoved: []string{"a:1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := datastore.NewStore(nil, nil)
			var mu sync.Mutex
			var removed []string
			s.OnRemove(func(addr string) { mu.Lock(); removed = append(removed, addr); mu.Unlock() })
			s.Sync(tt.first)
			before := map[string]*datastore.Endpoint{}
			for _, ep := range s.Endpoints() {
				before[ep.Address] = ep
			}
			s.Sync(tt.next)
			if got := addrs(s.Endpoints()); !slices.Equal(got, tt.want) {
				t.Fatalf("endpoints = %v, want %v", got, tt.want)
			}
			if !slices.Equal(removed, tt.wantRemoved) {
				t.Fatalf("removed = %v, want %v", removed, tt.wantRemoved)
			}
			for addr, ep := range before {
				kept := s.Get(addr) == ep
				if kept != slices.Contains(tt.wantKept, addr) {
					t.Errorf("%s kept = %v", addr, kept)
				}
			}
		})
	}
}

func TestStoreSnapshotIsImmutable(t *testing.T) {
	s := datastore.NewStore(nil, nil)
	s.Sync([]datastore.EndpointSpec{{Address: "a:1"}, {Address: "b:1"}})
	snap := s.Endpoints()
	s.Sync([]datastore.EndpointSpec{{Address: "c:1"}})
	if got := addrs(snap); !slices.Equal(got, []string{"a:1", "b:1"}) {
		t.Fatalf("old snapshot changed: %v", got)
	}
	if s.Get("a:1") != nil || s.Get("c:1") == nil {
		t.Fatal("Get does not reflect the new set")
	}
}

func TestStoreSubscribe(t *testing.T) {
	s := datastore.NewStore(nil, nil)
	ch, cancel := s.Subscribe()
	s.Sync([]datastore.EndpointSpec{{Address: "a:1"}})
	s.Sync([]datastore.EndpointSpec{{Address: "b:1"}}) // coalesced with the first
	select {
	case <-ch:
	default:
		t.Fatal("no change signal after Sync")
	}
	select {
	case <-ch:
		t.Fatal("signals were not coalesced")
	default:
	}
	cancel()
	s.Sync(nil)
	select {
	case <-ch:
		t.Fatal("signal after cancel")
	default:
	}
}

func TestStoreModels(t *testing.T) {
	s := datastore.NewStore(nil, nil)
	s.Sync([]datastore.EndpointSpec{{Address: "a:1"}, {Address: "b:1"}, {Address: "c:1"}})
	s.Get("a:1").SetModels(&datastore.Models{Base: "llama", Adapters: []string{"sql", "chat"}})
	s.Get("b:1").SetModels(&datastore.Models{Base: "qwen"})
	// c:1 has no model list yet.
	s.Get("b:1").ObserveResult(0, errTest, time.Now()) // health does not hide models
	want := []string{"chat", "llama", "qwen", "sql"}
	if got := s.Models(); !slices.Equal(got, want) {
		t.Fatalf("Models() = %v, want %v", got, want)
	}
}

func TestStoreMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := datastore.NewStore(nil, reg)
	s.Sync([]datastore.EndpointSpec{{Address: "a:1"}, {Address: "b:1"}})
	now := time.Now()
	for range datastore.HealthConsecutiveFailures {
		s.Get("a:1").ObserveResult(502, nil, now)
	}
	for range datastore.HealthConsecutiveFailures { // one of two may be ejected: b:1 is refused
		s.Get("b:1").ObserveResult(502, nil, now)
	}
	const want = `
# HELP switchyard_gateway_endpoint_ejections_refused_total Ejections passive health checking refused because the share of endpoints ejected at once had reached --max-ejection-percent.
# TYPE switchyard_gateway_endpoint_ejections_refused_total counter
switchyard_gateway_endpoint_ejections_refused_total 1
# HELP switchyard_gateway_endpoint_ejections_total Times an endpoint was ejected by passive health checking (outlier detection).
# TYPE switchyard_gateway_endpoint_ejections_total counter
switchyard_gateway_endpoint_ejections_total 1
# HELP switchyard_gateway_endpoints Model-server endpoints currently discovered.
# TYPE switchyard_gateway_endpoints gauge
switchyard_gateway_endpoints 2
# HELP switchyard_gateway_endpoints_ejected Endpoints currently in an ejection backoff.
# TYPE switchyard_gateway_endpoints_ejected gauge
switchyard_gateway_endpoints_ejected 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

func TestStoreConcurrentReaders(t *testing.T) {
	s := datastore.NewStore(nil, nil)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, ep := range s.Endpoints() {
					_ = ep.Metrics()
					_ = s.Get(ep.Address)
				}
				_ = s.Models()
			}
		})
	}
	for i := range 200 {
		specs := []datastore.EndpointSpec{{Address: "a:1"}}
		if i%2 == 0 {
			specs = append(specs, datastore.EndpointSpec{Address: "b:1"})
		}
		s.Sync(specs)
	}
	close(stop)
	wg.Wait()
}

// InFlightSinceScrape counts this gateway's in-flight growth since the newest scrape: sends less
// finishes, never below zero, reset by each scrape.
func TestInFlightSinceScrape(t *testing.T) {
	e := datastore.NewEndpoint("10.0.0.1:8000", "", datastore.EngineVLLM, nil)
	steps := []struct {
		what string
		do   func()
		want int64
	}{
		{"no scrape yet, 2 sent", func() { e.AddInFlight(2) }, 2},
		{"scraped", func() { e.SetMetrics(&datastore.Metrics{WaitingQueue: 1}) }, 0},
		{"3 sent", func() { e.AddInFlight(3) }, 3},
		{"1 finished", func() { e.AddInFlight(-1) }, 2},
		{"scraped again", func() { e.SetMetrics(&datastore.Metrics{WaitingQueue: 3}) }, 0},
		{"4 finished", func() { e.AddInFlight(-4) }, 0},
		{"1 sent", func() { e.AddInFlight(1) }, 0}, // still below the in-flight count at the scrape
		{"4 sent", func() { e.AddInFlight(4) }, 1},
	}
	for _, s := range steps {
		s.do()
		if got := e.InFlightSinceScrape(); got != s.want {
			t.Fatalf("%s: in flight since scrape %d, want %d", s.what, got, s.want)
		}
	}
}

// The scheduler's view holds the store's endpoints, in the same order, typed as
// framework.Endpoint; it follows every Sync and reading it allocates nothing.
func TestViewFollowsTheStore(t *testing.T) {
	s := datastore.NewStore(nil, nil)
	v := s.View()
	if len(v.Endpoints()) != 0 {
		t.Fatal("an empty store has an empty view")
	}
	for _, addrs := range [][]string{{"10.0.0.2:80", "10.0.0.1:80"}, {"10.0.0.3:80"}, {"10.0.0.1:80", "10.0.0.3:80", "10.0.0.4:80"}} {
		var specs []datastore.EndpointSpec
		for _, a := range addrs {
			specs = append(specs, datastore.EndpointSpec{Address: a})
		}
		s.Sync(specs)
		eps, views := s.Endpoints(), v.Endpoints()
		if len(views) != len(eps) {
			t.Fatalf("view has %d endpoints, store %d", len(views), len(eps))
		}
		for i := range eps {
			if views[i] != framework.Endpoint(eps[i]) || views[i].Meta() != &eps[i].EndpointMeta {
				t.Fatalf("view[%d] = %s, store has %s", i, views[i].Meta().Address, eps[i].Address)
			}
		}
	}
	removed := ""
	v.OnRemove(func(addr string) { removed = addr })
	s.Sync([]datastore.EndpointSpec{{Address: "10.0.0.1:80"}, {Address: "10.0.0.3:80"}})
	if removed != "10.0.0.4:80" {
		t.Fatalf("OnRemove through the view got %q", removed)
	}
	if n := testing.AllocsPerRun(100, func() { _ = v.Endpoints() }); n != 0 {
		t.Fatalf("View.Endpoints allocates %v times", n)
	}
}
