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
		for _, e := range routeView(tb, "llama", nil) {
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
	cfg := clustertable.Config{
		Region:      "us-east-1",
		Now:         clk.now,
		RTT:         map[string]time.Duration{"us-west-2": 70 * time.Millisecond},
		MeasuredRTT: clustertable.RTTConfig{Off: true},
	}
	tb := clustertable.New(cfg, src, nil)
	tb.Observe(forward.Outcome{Target: forward.Target{Cluster: "west"}, Status: 200, RTT: time.Second})
	if got := routeView(tb, "llama", nil)[0].Cluster.RTT; got != 70*time.Millisecond {
		t.Errorf("with measurement off RTT = %v, want the prior 70ms", got)
	}
}

// A cluster measured slow whose measurement has mostly faded back into the prior is unverified:
// it is offered to one request at a time (a probe) until an answer measures it again, and only
// then gets its full share. Clusters measured about as fast as their prior, or faster, just fade.
func TestFadedSlowClusterIsProbed(t *testing.T) {
	t0 := time.Unix(1000, 0)
	clk := &clock{t: t0}
	src := source{
		summary("ap", "ap-south-1", "gw-a", "http://a", t0, false, model("llama", 2)),
		summary("east", "us-east-1", "gw-e", "http://e", t0, false, model("llama", 2)),
		summary("eu", "eu-west-1", "gw-u", "http://u", t0, false, model("llama", 2)),
		summary("west", "us-west-2", "gw-w", "http://w", t0, false, model("llama", 2)),
	}
	cfg := clustertable.Config{Region: "us-east-1", Now: clk.now, RTT: map[string]time.Duration{
		"us-west-2": 70 * time.Millisecond, "eu-west-1": 80 * time.Millisecond, "ap-south-1": 200 * time.Millisecond}}
	tb := clustertable.New(cfg, src, nil)
	answer := func(cluster string, rtt time.Duration) {
		tb.Observe(forward.Outcome{Target: forward.Target{Cluster: cluster}, Status: 200, RTT: rtt})
	}
	answer("ap", 150*time.Millisecond) // faster than its prior
	answer("east", 2*time.Millisecond) // slower than its prior of 0, within the margin
	answer("eu", 85*time.Millisecond)  // about its prior
	answer("west", 470*time.Millisecond)
	steps := []struct {
		name           string
		at             time.Duration // since t0
		westAnswers    time.Duration // the RTT a west answer measures just before the view; 0: none
		wantUnverified bool
		wantWithheld   bool
	}{
		{"measured slow: steered around by its estimate", time.Second, 0, false, false},
		{"faded, but still mostly measurement", 6 * time.Second, 0, false, false},
		{"mostly prior: unverified, one probe offered", 7 * time.Second, 0, true, false},
		{"no second request while the probe may run", 7100 * time.Millisecond, 0, true, true},
		{"still none", 8900 * time.Millisecond, 0, true, true},
		{"another probe once the first had its time", 9100 * time.Millisecond, 0, true, false},
		{"and again one at a time", 9200 * time.Millisecond, 0, true, true},
		{"the probe's answer: still slow, measured again", 9300 * time.Millisecond, 470 * time.Millisecond, false, false},
		{"faded again: probed again", 16400 * time.Millisecond, 0, true, false},
		{"one at a time", 16500 * time.Millisecond, 0, true, true},
		{"the path healed: the answer verifies it", 16600 * time.Millisecond, 72 * time.Millisecond, false, false},
		{"full share from then on", 16700 * time.Millisecond, 0, false, false},
		{"and long after (measured near its prior, it just fades)", time.Minute, 0, false, false},
	}
	for _, s := range steps {
		clk.t = t0.Add(s.at)
		if s.westAnswers > 0 {
			answer("west", s.westAnswers)
		}
		for _, e := range routeView(tb, "llama", nil) {
			unverified, withheld := e.Cluster.Name == "west" && s.wantUnverified, e.Cluster.Name == "west" && s.wantWithheld
			if e.Unverified != unverified || e.Withheld != withheld || e.Cluster.Unhealthy != withheld {
				t.Errorf("%s: %s unverified %v withheld %v unhealthy %v (RTT %v), want %v %v %v", s.name, e.Cluster.Name,
					e.Unverified, e.Withheld, e.Cluster.Unhealthy, e.Cluster.RTT, unverified, withheld, withheld)
			}
		}
	}
}

// An unverified cluster that is the only one able to take a request is not withheld.
func TestUnverifiedClusterNotWithheldWhenAlone(t *testing.T) {
	t0 := time.Unix(1000, 0)
	clk := &clock{t: t0}
	src := source{
		summary("eu", "eu-west-1", "gw-u", "http://u", t0, false, model("llama", 2)),
		summary("west", "us-west-2", "gw-w", "http://w", t0, false, model("llama", 2)),
	}
	tb := clustertable.New(clustertable.Config{Region: "us-east-1", Now: clk.now,
		RTT: map[string]time.Duration{"us-west-2": 70 * time.Millisecond}}, src, drains{"eu": true})
	tb.Observe(forward.Outcome{Target: forward.Target{Cluster: "west"}, Status: 200, RTT: 470 * time.Millisecond})
	for _, at := range []time.Duration{8 * time.Second, 8100 * time.Millisecond, 8200 * time.Millisecond} {
		clk.t = t0.Add(at)
		if e := routeView(tb, "llama", nil)[1]; !e.Unverified || e.Withheld || e.Cluster.Unhealthy {
			t.Errorf(
				"%v: west unverified %v withheld %v unhealthy %v, want unverified and offered",
				at,
				e.Unverified,
				e.Withheld,
				e.Cluster.Unhealthy,
			)
		}
	}
}

// The region cut's scenario at the table: a path measured slow (470 ms; 70 ms configured) gets no
// traffic while another cluster answers in 85 ms; as its measurement fades into the prior its
// estimate eventually beats the other's. Requests arrive every 50 ms and go to the lowest
// estimate (as the routing decision would between two otherwise equal clusters); each answer
// arrives one round trip later. Requests sent to the slow path before its first answer came back
// pay for the unverified estimate: at most one at a time.
func TestFadedSlowPathGetsOneRequestAtATime(t *testing.T) {
	t0 := time.Unix(1000, 0)
	clk := &clock{t: t0}
	src := source{
		summary("eu", "eu-west-1", "gw-u", "http://u", t0, false, model("llama", 2)),
		summary("west", "us-west-2", "gw-w", "http://w", t0, false, model("llama", 2)),
	}
	tb := clustertable.New(clustertable.Config{Region: "us-east-1", Now: clk.now, RTT: map[string]time.Duration{
		"us-west-2": 70 * time.Millisecond, "eu-west-1": 80 * time.Millisecond}}, src, nil)
	real := map[string]time.Duration{"eu": 85 * time.Millisecond, "west": 470 * time.Millisecond}
	type answer struct {
		at      time.Time
		cluster string
	}
	var pending []answer
	tb.Observe(forward.Outcome{Target: forward.Target{Cluster: "west"}, Status: 200, RTT: real["west"]})
	sent, inFlight, maxInFlight := 0, 0, 0
	for clk.t.Before(t0.Add(90 * time.Second)) {
		clk.t = clk.t.Add(50 * time.Millisecond)
		kept := pending[:0]
		for _, a := range pending {
			if clk.t.Before(a.at) {
				kept = append(kept, a)
				continue
			}
			tb.Observe(forward.Outcome{Target: forward.Target{Cluster: a.cluster}, Status: 200, RTT: real[a.cluster]})
			if a.cluster == "west" {
				inFlight--
			}
		}
		pending = kept
		best := ""
		var bestRTT time.Duration
		for _, e := range routeView(tb, "llama", nil) {
			if !e.Cluster.Unhealthy && (best == "" || e.Cluster.RTT < bestRTT) {
				best, bestRTT = e.Cluster.Name, e.Cluster.RTT
			}
		}
		pending = append(pending, answer{at: clk.t.Add(real[best]), cluster: best})
		if best == "west" {
			sent++
			inFlight++
			maxInFlight = max(maxInFlight, inFlight)
		}
	}
	t.Logf("%d requests to the slow path in 90 s, at most %d at a time", sent, maxInFlight)
	if sent == 0 {
		t.Fatalf("the faded path was never probed")
	}
	if maxInFlight > 1 {
		t.Errorf(
			"%d requests went to the faded slow path before its first answer (%d in 90 s), want one at a time",
			maxInFlight,
			sent,
		)
	}
}
