package frontdoor_test

import (
	"testing"
	"time"
)

// Round trips measured on forwarded requests steer traffic off a path that got slow, which
// gossip's coordinates and the configured figures do not show: the us-west-2 link (70 ms
// configured, the nearest) now takes 300 ms, and after its first slow answers the router sends
// the overflow to eu-west-1 (80 ms configured) instead.
func TestSlowPathSteeredAroundByMeasuredRTT(t *testing.T) {
	// Both remote paths have real delay (a loopback answer measured at ~0 would beat any
	// configured figure): eu-west-1 its configured 80 ms, us-west-2 300 ms instead of 70.
	f := newFleetDelayed(t, map[string]time.Duration{"west": 300 * time.Millisecond, "eu": 80 * time.Millisecond},
		clusterSpec{name: "east", region: "us-east-1", kvUsed: 1}, // full: everything overflows
		clusterSpec{name: "west", region: "us-west-2", kvUsed: 0.1},
		clusterSpec{name: "eu", region: "eu-west-1", kvUsed: 0.1},
	)
	url := router(t, f, nil)
	for range 10 {
		if resp, body := post(t, url, okBody); resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	}
	if f.hits["west"].Load() == 0 {
		t.Fatalf(
			"the nearest region by the configured RTT never got a request: nothing was measured (eu %d, east %d)",
			f.hits["eu"].Load(),
			f.hits["east"].Load(),
		)
	}
	west, eu := f.hits["west"].Load(), f.hits["eu"].Load()
	for range 20 {
		if resp, body := post(t, url, okBody); resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Route") != "overflow" {
			t.Fatalf("status %d route %q: %s", resp.StatusCode, resp.Header.Get("X-Switchyard-Route"), body)
		}
	}
	if got := f.hits["west"].Load() - west; got > 1 {
		t.Errorf("the slow path still got %d of 20 requests once measured", got)
	}
	if got := f.hits["eu"].Load() - eu; got < 19 {
		t.Errorf("eu-west-1 got %d of 20 requests, want nearly all", got)
	}
	if f.hits["east"].Load() != 0 {
		t.Errorf("the saturated local cluster got %d requests", f.hits["east"].Load())
	}
}
