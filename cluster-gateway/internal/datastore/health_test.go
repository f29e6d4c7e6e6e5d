package datastore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
)

var errTest = errors.New("connection refused")

// outcome is one proxied result: an HTTP status, or 0 with a connection error.
type outcome int

const connErr outcome = 0

func observe(ep *datastore.Endpoint, now time.Time, outs ...outcome) {
	for _, o := range outs {
		var err error
		if o == connErr {
			err = errTest
		}
		ep.ObserveResult(int(o), err, now)
	}
}

func TestEjection(t *testing.T) {
	tests := []struct {
		name string
		outs []outcome
		want bool
	}{
		{"all ok", []outcome{200, 200, 200, 200, 200, 200}, false},
		{"too few results", []outcome{500, 500, 200, 500}, false}, // 3 of 4: below min results
		{"mostly failing", []outcome{500, 200, 503, 200, 502}, true},
		{"half failing is not mostly", []outcome{200, 500, 200, 500, 200, 500}, false},
		{"consecutive failures", []outcome{200, 200, 200, 200, 200, 500, 500, 500, 500, 500}, true},
		{"connection errors", []outcome{connErr, 200, connErr, 200, connErr}, true},
		{"4xx and 429 are answers", []outcome{429, 429, 404, 400, 429, 429}, false},
		{
			"window forgets old failures",
			[]outcome{500, 500, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 500, 500},
			false,
		},
	}
	now := time.Unix(1000, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := datastore.NewEndpoint("a:1", "", "", nil)
			observe(ep, now, tt.outs...)
			if got := ep.Ejected(now); got != tt.want {
				t.Fatalf("Ejected = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestClientCancelIsNotAFailure(t *testing.T) {
	ep := datastore.NewEndpoint("a:1", "", "", nil)
	now := time.Unix(1000, 0)
	for range 2 * datastore.HealthConsecutiveFailures {
		ep.ObserveResult(0, fmt.Errorf("copy body: %w", context.Canceled), now)
	}
	if ep.Ejected(now) {
		t.Fatal("client cancellations ejected the pod")
	}
	for range datastore.HealthConsecutiveFailures {
		ep.ObserveResult(0, context.DeadlineExceeded, now)
	}
	if !ep.Ejected(now) {
		t.Fatal("timeouts did not eject the pod")
	}
}

func TestEjectionBackoff(t *testing.T) {
	ep := datastore.NewEndpoint("a:1", "", "", nil)
	now := time.Unix(1000, 0)
	fail := []outcome{500, 500, 500, 500, 500}
	wantDurations := []time.Duration{
		5 * time.Second,
		10 * time.Second,
		20 * time.Second,
		40 * time.Second,
		60 * time.Second,
		60 * time.Second,
	}
	for i, want := range wantDurations {
		observe(ep, now, fail...)
		if !ep.Ejected(now) {
			t.Fatalf("ejection %d: not ejected", i)
		}
		if got := ep.EjectedUntil().Sub(now); got != want {
			t.Fatalf("ejection %d lasts %v, want %v", i, got, want)
		}
		// Results of requests still in flight during the ejection are ignored.
		observe(ep, now.Add(time.Second), fail...)
		if !ep.Ejected(now.Add(want - time.Nanosecond)) {
			t.Fatalf("ejection %d ended early", i)
		}
		now = now.Add(want)
		if ep.Ejected(now) {
			t.Fatalf("ejection %d did not end", i)
		}
	}
	if got := ep.Ejections(); got != int64(len(wantDurations)) {
		t.Fatalf("Ejections = %d", got)
	}
	// A recovered pod starts again at the base backoff.
	for range datastore.HealthRecoverySuccesses {
		observe(ep, now, 200)
	}
	observe(ep, now, fail...)
	if got := ep.EjectedUntil().Sub(now); got != datastore.EjectionBase {
		t.Fatalf("after recovery ejection lasts %v, want %v", got, datastore.EjectionBase)
	}
}

func TestMetricsAgeAndStale(t *testing.T) {
	now := time.Unix(1000, 0)
	ep := datastore.NewEndpoint("a:1", "", "", nil)
	if ep.MetricsAge(now) != datastore.NoMetricsAge || !ep.Stale(now, 2*time.Second) {
		t.Fatal("never scraped endpoint must be stale with NoMetricsAge")
	}
	ep.SetMetrics(&datastore.Metrics{ScrapedAt: now})
	tests := []struct {
		name     string
		at       time.Duration
		failures int
		want     bool
	}{
		{"fresh", time.Second, 0, false},
		{"old", 3 * time.Second, 0, true},
		{"failing", 0, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep.SetMetrics(&datastore.Metrics{ScrapedAt: now})
			for range tt.failures {
				ep.RecordScrapeFailure()
			}
			if got := ep.Stale(now.Add(tt.at), 2*time.Second); got != tt.want {
				t.Fatalf("Stale = %v, want %v", got, tt.want)
			}
			if got := ep.MetricsAge(now.Add(tt.at)); got != tt.at {
				t.Fatalf("MetricsAge = %v, want %v", got, tt.at)
			}
		})
	}
}
