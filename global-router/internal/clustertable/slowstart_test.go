package clustertable_test

import (
	"errors"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/gossip"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// swappable is a summary source whose summaries a test replaces.
type swappable struct{ s []gossip.Summary }

func (s *swappable) Snapshot() []gossip.Summary { return s.s }

var refused = forward.Outcome{Target: forward.Target{Cluster: "c1"}, Err: errors.New("connection refused")}

// halfOpenTable returns a us-east-1 table over c1 and c2 (c2's model capacity is second, nil
// for a plain one) whose slow-start draws never admit, with c1 ejected by a refused connection at
// t0 and now half open: its clock stands at t0 + 1.2 s.
func halfOpenTable(second *gossipv1.ModelCapacity, drained drains) (*clustertable.Table, *clock, time.Time) {
	t0 := time.Unix(1000, 0)
	clk := &clock{t: t0}
	if second == nil {
		second = model("llama", 2)
	}
	src := source{
		summary("c1", "us-east-1", "gw-a", "http://a", t0, false, model("llama", 2)),
		summary("c2", "us-east-1", "gw-b", "http://b", t0, false, second),
	}
	tb := clustertable.New(
		clustertable.Config{Region: "us-east-1", Now: clk.now, Rand: func() float64 { return 0.99 }},
		src,
		drained,
	)
	tb.Observe(refused) // ejected for 1 s, then half open
	clk.t = t0.Add(1200 * time.Millisecond)
	return tb, clk, t0
}

func TestSlowStartAfterEjection(t *testing.T) {
	t0 := time.Unix(1000, 0)
	clk := &clock{t: t0}
	draw := 0.0
	src := source{
		summary("c1", "us-east-1", "gw-a", "http://a", t0, false, model("llama", 2)),
		summary("c2", "us-east-1", "gw-b", "http://b", t0, false, model("llama", 2)),
	}
	tb := clustertable.New(
		clustertable.Config{Region: "us-east-1", Now: clk.now, Rand: func() float64 { return draw }},
		src,
		nil,
	)
	tb.Observe(refused) // ejected for 1 s, then half open
	answered := forward.Outcome{Target: forward.Target{Cluster: "c1"}, Status: 200}
	tests := []struct {
		name          string
		at            time.Duration
		outcome       *forward.Outcome
		draw          float64
		wantUnhealthy bool
		wantWithheld  bool
		// wantReturning: let in by slow start's draw (not a half-open probe).
		wantReturning bool
	}{
		{"ejected", 500 * time.Millisecond, nil, 0, true, false, false},
		{"half open: one probe offered whatever the draw", 1200 * time.Millisecond, nil, 0.99, false, false, false},
		{"half open: no second probe while the first may be running", 1300 * time.Millisecond, nil, 0, true, true, false},
		{"half open: another probe once the first had its time", 3300 * time.Millisecond, nil, 0.99, false, false, false},
		{"answered: slow start from 10%, drawn", 3400 * time.Millisecond, &answered, 0.05, false, false, true},
		{"answered: slow start from 10%, not drawn", 3400 * time.Millisecond, nil, 0.5, true, true, false},
		{"half way: 50% offered, drawn", 5900 * time.Millisecond, nil, 0.45, false, false, true},
		{"half way: 50% offered, not drawn", 5900 * time.Millisecond, nil, 0.55, true, true, false},
		{"slow start over", 8400 * time.Millisecond, nil, 0.99, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk.t, draw = t0.Add(tt.at), tt.draw
			if tt.outcome != nil {
				tb.Observe(*tt.outcome)
			}
			e := routeView(tb, "llama", nil)[0]
			if e.Cluster.Unhealthy != tt.wantUnhealthy || e.Withheld != tt.wantWithheld ||
				e.Cluster.Returning != tt.wantReturning {
				t.Fatalf(
					"share %.2f: unhealthy %v withheld %v returning %v, want %v %v %v",
					e.Share,
					e.Cluster.Unhealthy,
					e.Withheld,
					e.Cluster.Returning,
					tt.wantUnhealthy,
					tt.wantWithheld,
					tt.wantReturning,
				)
			}
		})
	}
}

func TestSlowStartNeverLeavesNowhereToGo(t *testing.T) {
	tb, clk, t0 := halfOpenTable(nil, drains{"c2": true})
	routeView(tb, "llama", nil) // the half-open cluster's probe
	clk.t = t0.Add(1300 * time.Millisecond)
	if e := routeView(tb, "llama", nil)[0]; e.Cluster.Unhealthy || e.Withheld || e.Share >= 1 {
		t.Fatalf("c1 in slow start with c2 drained: %+v, want it offered (share < 1, not withheld)", e)
	}
}

func TestSlowStartWhenAGatewayIsReplaced(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c2 := summary("c2", "us-east-1", "gw-b", "http://b", t0, false, model("llama", 2))
	c1 := func(node string, stale bool) gossip.Summary {
		return summary("c1", "us-east-1", node, "http://a", t0, stale, model("llama", 2))
	}
	tests := []struct {
		name       string
		ejectFirst bool   // ejected (then half open) before its gateway went quiet
		after      string // the node whose fresh summary ends the stale spell
		wantShare  []float64
	}{
		// A new gateway process (a new gossip member): slow start over 5 s, and no longer half
		// open (Rand returns 0 and every view is offered it, even two at the same moment).
		{"restarted gateway", true, "gw-a2", []float64{0.1, 0.1, 0.5, 1}},
		// The same gateway's summary was only late: nothing to ramp.
		{"late summary", false, "gw-a", []float64{1, 1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &clock{t: t0.Add(-10 * time.Second)}
			src := &swappable{s: []gossip.Summary{c1("gw-a", false), c2}}
			tb := clustertable.New(
				clustertable.Config{Region: "us-east-1", Now: clk.now, Rand: func() float64 { return 0 }},
				src,
				nil,
			)
			routeView(tb, "llama", nil)
			if tt.ejectFirst {
				clk.t = t0.Add(-5 * time.Second)
				tb.Observe(refused)
			}
			src.s = []gossip.Summary{c1("gw-a", true), c2}
			clk.t = t0
			if e := routeView(tb, "llama", nil)[0]; !e.Cluster.Stale {
				t.Fatalf("c1 should be stale: %+v", e.Cluster)
			}
			src.s = []gossip.Summary{c1(tt.after, false), c2}
			for i, at := range []time.Duration{0, 0, 2500 * time.Millisecond, 5 * time.Second} {
				clk.t = t0.Add(at)
				if e := routeView(tb, "llama", nil)[0]; e.Share != tt.wantShare[i] || e.Withheld {
					t.Errorf(
						"view %d, %v after the fresh summary: share %.2f withheld %v, want %.2f offered",
						i,
						at,
						e.Share,
						e.Withheld,
						tt.wantShare[i],
					)
				}
			}
		})
	}
}

func TestFailuresDuringEjectionAreOneIncident(t *testing.T) {
	t0 := time.Unix(1000, 0)
	clk := &clock{t: t0}
	// c2 is there so that c1 may be ejected (a lone cluster never is: see MaxEjectionPercent).
	src := source{summary("c1", "us-east-1", "gw-a", "http://a", t0, false, model("llama", 2)),
		summary("c2", "us-east-1", "gw-b", "http://b", t0, false, model("llama", 2))}
	cfg := clustertable.Config{
		Region: "us-east-1",
		Now:    clk.now,
		Ejection: clustertable.EjectionConfig{
			Consecutive:        3,
			Base:               time.Second,
			Max:                30 * time.Second,
			MaxEjectionPercent: 50,
		},
	}
	tb := clustertable.New(cfg, src, nil)
	for range 20 { // every request in flight on a connection that broke
		tb.Observe(refused)
	}
	tb.Observe(forward.Outcome{Target: forward.Target{Cluster: "c1"}, Status: 502})
	steps := []struct {
		name    string
		at      time.Duration
		fail    bool
		ejected bool
	}{
		{"ejected", 900 * time.Millisecond, false, true},
		{"one ejection of 1 s, not twenty", 1100 * time.Millisecond, false, false},
		{"a new failure is the second ejection: 2 s", 1100 * time.Millisecond, true, true},
		{"still out", 3000 * time.Millisecond, false, true},
		{"back", 3200 * time.Millisecond, false, false},
	}
	for _, s := range steps {
		clk.t = t0.Add(s.at)
		if s.fail {
			tb.Observe(refused)
		}
		if got := routeView(tb, "llama", nil)[0].Cluster.Unhealthy; got != s.ejected {
			t.Fatalf("%s: unhealthy %v, want %v", s.name, got, s.ejected)
		}
	}
}

// View shows a half-open cluster's due probe turn and a slow-starting cluster without taking
// the turn or drawing (Claim does): however often an operator lists the clusters, the next
// request still gets the probe.
func TestViewTakesNoProbeTurn(t *testing.T) {
	tb, _, _ := halfOpenTable(nil, nil)
	for range 5 {
		if e := tb.View("llama", nil)[0]; e.Cluster.Unhealthy || e.Withheld {
			t.Fatalf("view: due probe shown unhealthy %v withheld %v", e.Cluster.Unhealthy, e.Withheld)
		}
	}
	if e := routeView(tb, "llama", nil)[0]; e.Cluster.Unhealthy {
		t.Fatal("the request after the views did not get the probe turn")
	}
	if e := tb.View("llama", nil)[0]; !e.Withheld {
		t.Fatal("view after the probe was taken: want withheld until the next turn")
	}
	tb.Observe(forward.Outcome{Target: forward.Target{Cluster: "c1"}, Status: 200}) // slow start from 10%
	if e := tb.View("llama", nil)[0]; e.Withheld || e.Share >= 1 {
		t.Fatalf("view in slow start: withheld %v share %.2f, want offered with its share", e.Withheld, e.Share)
	}
	if e := routeView(tb, "llama", nil)[0]; !e.Withheld {
		t.Fatal("a request in slow start with a 0.99 draw: want withheld")
	}
}

// A half-open cluster's probe turn, taken by a view whose request then went elsewhere, is given
// back: the next request is offered the cluster instead of it waiting out probeWait unprobed. A
// turn the request used stays taken.
func TestProbeTurnReleased(t *testing.T) {
	tb, _, _ := halfOpenTable(nil, nil)
	offered := func() bool { e := routeView(tb, "llama", nil)[0]; return !e.Withheld && !e.Cluster.Unhealthy }

	view := routeView(tb, "llama", nil)
	if view[0].Withheld {
		t.Fatal("half-open c1 not offered its probe")
	}
	if offered() {
		t.Fatal("a second probe offered while the first turn is taken")
	}
	tb.Release(view, 1) // the request went to c2
	view = routeView(tb, "llama", nil)
	if view[0].Withheld {
		t.Fatal("c1's turn was not given back when the request went elsewhere")
	}
	tb.Release(view, 0) // this one went to c1: its probe
	if offered() {
		t.Fatal("a used probe turn was given back")
	}
	view = tb.View("llama", nil) // a dry run takes no turn: nothing to give back
	tb.Release(view, -1)
	if offered() {
		t.Fatal("releasing a dry run's view gave the used turn back")
	}
}

// A cluster whose every pod is saturated takes nothing, so it does not make a returning
// cluster's probe or slow-start share wait: the returning cluster is offered.
func TestSaturatedClusterDoesNotHoldOthersBack(t *testing.T) {
	full := model("llama", 2)
	full.Saturated = true
	tb, clk, t0 := halfOpenTable(full, nil)
	routeView(tb, "llama", nil) // c1's probe turn, kept (the request went there)
	clk.t = t0.Add(1300 * time.Millisecond)
	if e := routeView(tb, "llama", nil)[0]; e.Withheld || e.Cluster.Unhealthy {
		t.Fatalf("c1 withheld while the only other cluster is saturated: %+v", e.Cluster)
	}
}
