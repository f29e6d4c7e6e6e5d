package publish_test

import (
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/kvevents"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/publish"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
	"github.com/switchyard-dev/switchyard/gossip/sketch"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// TestSketchFromKVIndex builds summaries whose prefix sketch comes from the KV event index: a
// prompt routed to a pod is published only while a pod serving its model reports holding its
// blocks, and the sketch says it was built from KV events; RecentPrefixes' sketch says routed.
func TestSketchFromKVIndex(t *testing.T) {
	clk := newClock()
	view := newView(t, clk.Now(), podSpec{base: "m", m: kv(0, 0, 0.1)}, podSpec{base: "n", m: kv(0, 0, 0.1)})
	idx := kvevents.NewIndex(1 << 20)
	res := kvevents.NewResidentPrefixes(idx, view.View(), 4096, 1024)
	prompt := make([]byte, 64*8) // 8 text blocks
	for i := range prompt {
		prompt[i] = byte('a' + i%26)
	}
	text := prefix.Hashes(nil, "m", prompt, 0)
	kvHashes := make([]uint64, 8) // the engine's chain: 8 blocks of 16 tokens
	for i := range kvHashes {
		kvHashes[i] = uint64(1000 + i)
	}
	res.Record("m", text, kvHashes, true)
	p, err := publish.New(testConfig(), view.View(), &recordingSink{}, publish.Options{Now: clk.Now,
		Prefixes: res, PrefixSketchSource: gossipv1.PrefixSketchSource_PREFIX_SKETCH_SOURCE_KV_EVENTS})
	if err != nil {
		t.Fatal(err)
	}
	cached := func() int {
		t.Helper()
		ps := p.Build().GetModels()[0].GetPrefixSketch()
		if ps == nil {
			return 0
		}
		if got := ps.GetSource(); got != gossipv1.PrefixSketchSource_PREFIX_SKETCH_SOURCE_KV_EVENTS {
			t.Errorf("sketch source %v, want KV_EVENTS", got)
		}
		b, err := sketch.FromProto(ps)
		if err != nil {
			t.Fatal(err)
		}
		return b.LongestPrefix(text)
	}
	if n := cached(); n != 0 {
		t.Fatalf("routed but stored by no pod: %d blocks published", n)
	}
	store := func(addr string, kind kvevents.Kind, hs []uint64) {
		idx.Apply(addr, &kvevents.Batch{Events: []kvevents.Event{{Kind: kind, Hashes: hs}}})
	}
	store(addr(1), kvevents.KindStored, kvHashes) // a pod of another model holds the same blocks
	if n := cached(); n != 0 {
		t.Errorf("blocks held by a pod of model n published for m: %d", n)
	}
	store(addr(0), kvevents.KindStored, kvHashes[:5])
	if n := cached(); n != 5 {
		t.Errorf("pod holds 5 blocks: sketch matches %d, want 5", n)
	}
	store(addr(0), kvevents.KindRemoved, kvHashes[2:5])
	if n := cached(); n != 2 {
		t.Errorf("3 blocks evicted: sketch matches %d, want 2", n)
	}
	idx.ClearPod(addr(0))
	if n := cached(); n != 0 {
		t.Errorf("pod cleared: sketch matches %d, want 0", n)
	}

	recent := publish.NewRecentPrefixes(1024, 0)
	recent.Record("m", text)
	p, err = publish.New(testConfig(), view.View(), &recordingSink{}, publish.Options{Now: clk.Now, Prefixes: recent})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Build().GetModels()[0].GetPrefixSketch().
		GetSource(); got != gossipv1.PrefixSketchSource_PREFIX_SKETCH_SOURCE_ROUTED {
		t.Errorf("RecentPrefixes sketch source %v, want ROUTED", got)
	}
}
