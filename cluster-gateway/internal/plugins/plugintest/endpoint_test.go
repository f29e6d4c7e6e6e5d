package plugintest_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

// settable is what a step may do to an endpoint; the fake and the datastore's endpoint both have
// these methods.
type settable interface {
	framework.Endpoint
	SetMetrics(*framework.Metrics)
	AddInFlight(int64)
	RecordScrapeFailure()
}

// The fake follows the datastore endpoint's rules for staleness and in-flight accounting, so a
// plugin tested against it behaves the same on the gateway's endpoints.
func TestFakeMatchesDatastoreEndpoint(t *testing.T) {
	at := plugintest.Epoch
	steps := []struct {
		name string
		do   func(e settable)
	}{
		{"new", func(settable) {}},
		{"scraped", func(e settable) { e.SetMetrics(&framework.Metrics{WaitingQueue: 2, ScrapedAt: at}) }},
		{"sent 3", func(e settable) { e.AddInFlight(3) }},
		{
			"scraped again",
			func(e settable) { e.SetMetrics(&framework.Metrics{WaitingQueue: 5, ScrapedAt: at.Add(time.Second)}) },
		},
		{"2 finished", func(e settable) { e.AddInFlight(-2) }},
		{"sent 4", func(e settable) { e.AddInFlight(4) }},
		{"scrape failed", func(e settable) { e.RecordScrapeFailure() }},
		{"recovered", func(e settable) { e.SetMetrics(&framework.Metrics{ScrapedAt: at.Add(2 * time.Second)}) }},
	}
	fake := plugintest.NewEndpoint("10.0.0.1:8000")
	real := datastore.NewEndpoint("10.0.0.1:8000", "", "", nil)
	const limit = 2 * time.Second
	for _, st := range steps {
		st.do(fake)
		st.do(real)
		for _, now := range []time.Time{at, at.Add(2500 * time.Millisecond), at.Add(5 * time.Second)} {
			if f, r := fake.Stale(now, limit), real.Stale(now, limit); f != r {
				t.Errorf("%s: Stale at +%v: fake %v, datastore %v", st.name, now.Sub(at), f, r)
			}
		}
		if f, r := fake.InFlight(), real.InFlight(); f != r {
			t.Errorf("%s: InFlight: fake %d, datastore %d", st.name, f, r)
		}
		if f, r := fake.InFlightSinceScrape(), real.InFlightSinceScrape(); f != r {
			t.Errorf("%s: InFlightSinceScrape: fake %d, datastore %d", st.name, f, r)
		}
		if f, r := fake.Metrics(), real.Metrics(); !reflect.DeepEqual(f, r) {
			t.Errorf("%s: Metrics: fake %v, datastore %v", st.name, f, r)
		}
	}
}

func TestFakeEjection(t *testing.T) {
	e := plugintest.NewEndpoint("a")
	now := plugintest.Epoch
	if e.Ejected(now) {
		t.Fatal("a new endpoint is not ejected")
	}
	e.EjectUntil(now.Add(time.Second))
	if !e.Ejected(now) || e.Ejected(now.Add(time.Second)) {
		t.Fatal("ejected until the given time, not after")
	}
	e.EjectUntil(time.Time{})
	if e.Ejected(now) {
		t.Fatal("EjectUntil(zero) ends the ejection")
	}
}
