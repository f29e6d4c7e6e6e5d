package clustertable_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/gossip"
)

// routeView is what a request that will be routed does: View, then Claim.
func routeView(tb *clustertable.Table, model string, hashes []uint64) []clustertable.Entry {
	view := tb.View(model, hashes)
	tb.Claim(view)
	return view
}

// View is a read: however often it is called, it returns the same view and leaves what the
// next request sees as it was. A restarted gateway's summary shows its cluster returning in
// every view, but its slow start begins only when a request claims a view.
func TestViewIsARead(t *testing.T) {
	t0 := time.Unix(1000, 0)
	clk := &clock{t: t0}
	src := &swappable{s: []gossip.Summary{
		summary("c1", "us-east-1", "gw-a", "http://a", t0, false, model("llama", 2)),
		summary("c2", "us-east-1", "gw-b", "http://b", t0, false, model("llama", 2)),
	}}
	tb := clustertable.New(
		clustertable.Config{Region: "us-east-1", Now: clk.now, Rand: func() float64 { return 0 }},
		src,
		nil,
	)
	routeView(tb, "llama", nil)
	src.s[0] = summary("c1", "us-east-1", "gw-a", "http://a", t0, true, model("llama", 2)) // c1's gateway stops publishing
	clk.t = t0.Add(5 * time.Second)
	routeView(tb, "llama", nil)
	clk.t = t0.Add(10 * time.Second) // a new gateway replica of c1 publishes
	src.s[0] = summary("c1", "us-east-1", "gw-a2", "http://a", clk.t, false, model("llama", 2))

	first := tb.View("llama", nil)
	if first[0].Share >= 1 {
		t.Fatalf("the restarted cluster's share %.2f, want slow start", first[0].Share)
	}
	for range 3 {
		clk.t = clk.t.Add(time.Second)
		if again := tb.View("llama", nil); again[0].Share != first[0].Share || again[0].Withheld != first[0].Withheld {
			t.Fatalf("view %+v after %+v: a view changed the next one", again[0].Cluster, first[0].Cluster)
		}
	}
	claimed := tb.View("llama", nil)
	tb.Claim(claimed) // the slow start begins now
	clk.t = clk.t.Add(2 * time.Second)
	if later := tb.View("llama", nil); later[0].Share <= first[0].Share {
		t.Fatalf("share %.2f two seconds after the claim, want more than %.2f", later[0].Share, first[0].Share)
	}
}

// Claim changes only what slow start and probes decide: the figures stay the view's.
func TestClaimKeepsTheFigures(t *testing.T) {
	tb, _, _ := halfOpenTable(nil, nil)
	view := tb.View("llama", nil)
	before := append([]clustertable.Entry(nil), view...)
	tb.Claim(view)
	for i := range view {
		a, b := view[i].Cluster, before[i].Cluster
		a.Unhealthy, b.Unhealthy, a.Returning, b.Returning = false, false, false, false
		if !reflect.DeepEqual(a, b) || view[i].Share != before[i].Share {
			t.Errorf("%s: claimed %+v, viewed %+v", a.Name, view[i].Cluster, before[i].Cluster)
		}
	}
}
