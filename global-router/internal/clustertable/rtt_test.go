package clustertable_test

import (
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
)

// Round trips measured on forwarded requests correct the prior (configured or gossip's
// coordinates), follow a path that slows down, and fade back into the prior once samples stop.
func TestMeasuredRTTCorrectsPriorAndFades(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	src := source{
		summary("east", "us-east-1", "gw-a", "http://a", clk.t, false, model("llama", 2)),
		summary("west", "us-west-2", "gw-b", "http://b", clk.t, false, model("llama", 2)),
	}
	cfg := clustertable.Config{Region: "us-east-1", Now: clk.now,
		RTT: map[string]time.Duration{"us-west-2": 70 * time.Millisecond}}
	tb := clustertable.New(cfg, src, nil)
	observe := func(cluster string, rtt time.Duration) {
		tb.Observe(forward.Outcome{Target: forward.Target{Cluster: cluster}, Status: 200, RTT: rtt})
	}
	rtt := func(cluster string) time.Duration {
		for _, e := range tb.View("llama", nil) {
			if e.Cluster.Name == cluster {
				return e.Cluster.RTT
			}
		}
		t.Fatalf("no cluster %s", cluster)
		return 0
	}
	near := func(got, want, tol time.Duration) bool { return got >= want-tol && got <= want+tol }

	if got := rtt("west"); got != 70*time.Millisecond {
		t.Fatalf("before any sample west RTT = %v, want the configured 70ms", got)
	}
	if got := rtt("east"); got != 0 {
		t.Fatalf("before any sample the local cluster's RTT = %v, want 0", got)
	}

	observe("west", 72*time.Millisecond)
	observe("east", 2*time.Millisecond)
	if got := rtt("west"); !near(got, 72*time.Millisecond, time.Millisecond) {
		t.Errorf("after one sample west RTT = %v, want the 72ms measured", got)
	}
	if got := rtt("east"); !near(got, 2*time.Millisecond, 100*time.Microsecond) {
		t.Errorf("after one sample east RTT = %v, want the 2ms measured", got)
	}

	// The link to west degrades to 400 ms: a second of answers moves the estimate most of the way.
	for range 10 {
		clk.t = clk.t.Add(100 * time.Millisecond)
		observe("west", 400*time.Millisecond)
	}
	if got := rtt("west"); got < 250*time.Millisecond || got > 400*time.Millisecond {
		t.Errorf("after a second of 400ms answers west RTT = %v, want most of the way to 400ms", got)
	}

	// Samples stop: after the fade time the estimate is mostly back to the prior, and long after
	// it entirely.
	at := rtt("west")
	clk.t = clk.t.Add(10 * time.Second)
	faded := rtt("west")
	if faded >= at || faded < 70*time.Millisecond {
		t.Errorf("10s after the last sample west RTT = %v, want between the prior 70ms and %v", faded, at)
	}
	clk.t = clk.t.Add(2 * time.Minute)
	if got := rtt("west"); !near(got, 70*time.Millisecond, time.Millisecond) {
		t.Errorf("long after the last sample west RTT = %v, want the prior 70ms", got)
	}

	// A burst of answers at one instant moves the average without replacing it.
	observe("east", 2*time.Millisecond)
	clk.t = clk.t.Add(time.Second)
	observe("east", 2*time.Millisecond)
	observe("east", 50*time.Millisecond) // same instant
	if got := rtt("east"); got < 2*time.Millisecond || got > 5*time.Millisecond {
		t.Errorf("one outlier at the instant of another sample moved east RTT to %v", got)
	}
}

func TestMeasuredRTTOff(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	src := source{summary("west", "us-west-2", "gw-b", "http://b", clk.t, false, model("llama", 2))}
	cfg := clustertable.Config{Region: "us-east-1", Now: clk.now, RTT: map[string]time.Duration{"us-west-2": 70 * time.Millisecond},
		MeasuredRTT: clustertable.RTTConfig{Off: true}}
	tb := clustertable.New(cfg, src, nil)
	tb.Observe(forward.Outcome{Target: forward.Target{Cluster: "west"}, Status: 200, RTT: time.Second})
	if got := tb.View("llama", nil)[0].Cluster.RTT; got != 70*time.Millisecond {
		t.Errorf("with measurement off RTT = %v, want the prior 70ms", got)
	}
}
