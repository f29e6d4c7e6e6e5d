package clustertable

import (
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/sketch"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

type fixedSource []gossip.Summary

func (s *fixedSource) Snapshot() []gossip.Summary { return *s }

// The decoded sketches of a cluster gossip has forgotten are dropped at the next view, and a
// newer summary's sketch replaces the older one's.
func TestDecodedSketchesFreed(t *testing.T) {
	now := time.Unix(1000, 0)
	b, err := sketch.NewForCapacity(100, 0.01, 1)
	if err != nil {
		t.Fatal(err)
	}
	hashes := []uint64{1, 2, 3}
	for _, h := range hashes {
		b.Add(h)
	}
	sum := func(cluster string, gen time.Time) gossip.Summary {
		return gossip.Summary{Node: cluster + "-gw", Cluster: cluster, Region: "r", Summary: &gossipv1.CapacitySummary{
			Cluster: cluster, Region: "r", GatewayUrl: "http://" + cluster, GeneratedAtUnixNano: gen.UnixNano(),
			Models: []*gossipv1.ModelCapacity{{Name: "m", ReadyPods: 1, PrefixSketch: b.Proto()}},
		}}
	}
	src := &fixedSource{sum("a", now), sum("b", now), sum("c", now)}
	tb := New(Config{Region: "r", Now: func() time.Time { return now }}, src, nil)
	held := func() (n int, clusters string) {
		for _, name := range []string{"a", "b", "c"} {
			if st := tb.states[name]; st != nil && st.sketches.held() {
				n++
				clusters += name
			}
		}
		return n, clusters
	}

	tb.View("m", hashes)
	if n, cs := held(); n != 3 || tb.sketchHolders != 3 {
		t.Fatalf("after the first view %d clusters (%s) hold sketches, counted %d; want 3", n, cs, tb.sketchHolders)
	}
	first := tb.states["a"].sketches.models[0].bloom
	tb.View("m", hashes)
	if got := tb.states["a"].sketches.models[0].bloom; got != first {
		t.Errorf("the same summary's sketch was decoded again")
	}

	*src = fixedSource{sum("a", now.Add(time.Second)), sum("c", now)} // b forgotten, a re-published
	tb.View("m", hashes)
	if n, cs := held(); n != 2 || cs != "ac" || tb.sketchHolders != 2 {
		t.Errorf("after b was forgotten %d clusters (%s) hold sketches, counted %d; want a and c", n, cs, tb.sketchHolders)
	}
	a := &tb.states["a"].sketches
	if a.summary != (*src)[0].Summary || len(a.models) != 1 || a.models[0].bloom == first {
		t.Errorf("a's newer summary did not replace its sketch: %+v", a)
	}
	if tb.states["b"].sketches.models != nil {
		t.Errorf("b's decoded sketches are still referenced")
	}
}
