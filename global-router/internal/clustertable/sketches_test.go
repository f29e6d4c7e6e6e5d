package clustertable_test

import (
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
	"github.com/switchyard-dev/switchyard/gossip/sketch"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// promptHashes returns the prefix-block hashes of a ten-block prompt.
func promptHashes() []uint64 {
	prompt := make([]byte, 10*prefix.BlockSize)
	for i := range prompt {
		prompt[i] = byte('a' + i%26)
	}
	return prefix.Hashes(nil, "llama", prompt, 0)
}

// sketchOf returns a prefix sketch holding the first n of hashes.
func sketchOf(t *testing.T, hashes []uint64, n int) *gossipv1.PrefixSketch {
	t.Helper()
	b, err := sketch.NewForCapacity(1000, 0.01, 42)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hashes[:n] {
		b.Add(h)
	}
	return b.Proto()
}

// A summary's sketch is decoded once and reused, but each newer summary's sketch is the one
// used, whatever the model asked about, and an invalid one caches nothing.
func TestPrefixSketchFollowsNewestSummary(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	hashes := promptHashes()
	withSketch := func(name string, ps *gossipv1.PrefixSketch, adapters ...string) *gossipv1.ModelCapacity {
		m := model(name, 2, adapters...)
		m.PrefixSketch = ps
		return m
	}
	invalid := sketchOf(t, hashes, 3)
	invalid.NumBits++ // not a whole number of bytes
	src := &swappable{}
	tb := clustertable.New(clustertable.Config{Region: "us-east-1", Now: clk.now}, src, nil)
	steps := []struct {
		name   string
		models []*gossipv1.ModelCapacity // nil: the previous summary again
		ask    string
		want   int // cached prefix tokens
	}{
		{
			"first summary",
			[]*gossipv1.ModelCapacity{withSketch("llama", sketchOf(t, hashes, 6)), withSketch("qwen", sketchOf(t, hashes, 2))},
			"llama",
			6 * 16,
		},
		{"same summary, again", nil, "llama", 6 * 16},
		{"same summary, other model", nil, "qwen", 2 * 16},
		{"same summary, first model again", nil, "llama", 6 * 16},
		{
			"newer summary replaces the sketch",
			[]*gossipv1.ModelCapacity{withSketch("llama", sketchOf(t, hashes, 9))},
			"llama",
			9 * 16,
		},
		{
			"an adapter's base model",
			[]*gossipv1.ModelCapacity{withSketch("llama", sketchOf(t, hashes, 4), "sql")},
			"sql",
			4 * 16,
		},
		{"invalid sketch caches nothing", []*gossipv1.ModelCapacity{withSketch("llama", invalid)}, "llama", 0},
		{"invalid sketch, again", nil, "llama", 0},
		{"no sketch", []*gossipv1.ModelCapacity{model("llama", 2)}, "llama", 0},
		{"a sketch again", []*gossipv1.ModelCapacity{withSketch("llama", sketchOf(t, hashes, 5))}, "llama", 5 * 16},
	}
	for _, s := range steps {
		if s.models != nil {
			clk.t = clk.t.Add(250 * time.Millisecond)
			src.s = []gossip.Summary{summary("c1", "us-east-1", "gw", "http://a", clk.t, false, s.models...)}
		}
		if got := routeView(tb, s.ask, hashes)[0].Cluster.CachedPrefixTokens; got != s.want {
			t.Errorf("%s: cached prefix tokens %d, want %d", s.name, got, s.want)
		}
		if got := routeView(tb, s.ask, nil)[0].Cluster.CachedPrefixTokens; got != 0 {
			t.Errorf("%s: with no prompt hashes cached prefix tokens %d, want 0", s.name, got)
		}
	}
}

// Replicas of one cluster need not be adjacent in a source's snapshot (gossip sorts them, a test
// source may not): the view still has one entry per cluster, sorted by name.
func TestViewGroupsUnsortedSnapshot(t *testing.T) {
	now := time.Unix(1000, 0)
	src := source{
		summary("c2", "eu-west-1", "gw-d", "http://d", now, false, model("llama", 2)),
		summary("c1", "us-east-1", "gw-a", "http://a", now.Add(-time.Second), false, model("llama", 4)),
		summary("c3", "us-east-1", "gw-e", "", now, false, model("llama", 4)),
		summary("c1", "us-east-1", "gw-b", "http://b", now, false, model("llama", 4)),
	}
	view := clustertable.New(clustertable.Config{Region: "us-east-1", Now: func() time.Time { return now }}, src, nil).
		View("llama", nil)
	if len(view) != 3 || view[0].Cluster.Name != "c1" || view[1].Cluster.Name != "c2" || view[2].Cluster.Name != "c3" {
		t.Fatalf("view %+v, want c1, c2, c3", view)
	}
	if got := view[0].URLs; len(got) != 2 || got[0] != "http://b" || got[1] != "http://a" {
		t.Errorf("c1 URLs = %v, want [http://b http://a]", got)
	}
	if view[2].URLs != nil || !view[2].Cluster.Stale {
		t.Errorf("c3 without a gateway URL: URLs %v stale %v, want none and stale", view[2].URLs, view[2].Cluster.Stale)
	}
	if src[0].Cluster != "c2" {
		t.Errorf("the source's snapshot was reordered")
	}
}

// Requests sent since the summary are counted from the newest send back, up to the 256 the
// table remembers.
func TestInFlightCountsBackFromNewestSend(t *testing.T) {
	tests := []struct {
		name          string
		before, after int
		want          int
	}{
		{"none", 0, 0, 0},
		{"only before the summary", 40, 0, 0},
		{"some after", 40, 7, 7},
		{"ring wrapped", 300, 7, 7},
		{"all after", 0, 200, 200},
		{"more than remembered", 10, 300, 256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Unix(1000, 0)
			clk := &clock{t: t0.Add(-time.Second)}
			src := source{summary("c1", "us-east-1", "gw", "http://a", t0, false, model("llama", 2))}
			tb := clustertable.New(clustertable.Config{Region: "us-east-1", Now: clk.now}, src, nil)
			for range tt.before {
				clk.t = clk.t.Add(time.Millisecond)
				tb.Sent("c1")
			}
			clk.t = t0
			tb.Sent("c1") // at the summary's own instant: counted by the gateway already
			for range tt.after {
				clk.t = clk.t.Add(time.Millisecond)
				tb.Sent("c1")
			}
			if got := routeView(tb, "llama", nil)[0].Cluster.InFlight; got != tt.want {
				t.Errorf("in flight %d, want %d", got, tt.want)
			}
		})
	}
}
