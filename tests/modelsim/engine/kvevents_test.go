package engine_test

import (
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/textgen"
)

// kvRequest is a request whose prefix cache is keyed by stand-in block hashes: block i of
// prompt p hashes to p*1000+i+1.
func kvRequest(p, tokens int) engine.Request {
	text := strings.Repeat(string(rune('a'+p)), tokens*textgen.CharsPerToken)
	ids := textgen.Tokenize(text)
	hashes := make([]uint64, tokens/16)
	for i := range hashes {
		hashes[i] = uint64(p*1000 + i + 1)
	}
	return engine.Request{Model: "m", Prompt: []byte(text), PromptTokens: tokens, MaxTokens: 1,
		TokenIDs: ids, BlockHashes: hashes}
}

func TestKVEventsStoredAndEvicted(t *testing.T) {
	cfg := engine.DefaultConfig()
	cfg.Profile.KVTokens = 64 * 16 // 64 blocks
	cfg.WatermarkBlocks = 0
	cfg.KVEvents = true
	sim, err := engine.NewSimulator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Prompt 0 (40 blocks) is cached, then prompt 1 (40 blocks) needs 17 of its blocks back.
	for p := range 2 {
		if _, err := sim.Submit(sim.Now(), kvRequest(p, 40*16)); err != nil {
			t.Fatal(err)
		}
		sim.Run()
	}
	evs := sim.Engine().TakeKVEvents(nil)
	stored, removed := map[uint64]engine.KVEvent{}, map[uint64]bool{}
	for _, ev := range evs {
		switch ev.Kind {
		case engine.KVStored:
			stored[ev.Hash] = ev
		case engine.KVRemoved:
			removed[ev.Hash] = true
		default:
			t.Fatalf("unexpected event %+v", ev)
		}
	}
	// The last block of each prompt is not full of computed prompt tokens when it is stored
	// (the last prompt token is computed with the first output), so 39 of 40 enter the cache.
	if len(stored) < 2*39 {
		t.Fatalf("%d blocks stored, want at least %d", len(stored), 2*39)
	}
	first := stored[1]
	if first.HasParent || len(first.Tokens) != 16 || first.Tokens[0] != textgen.Tokenize("aaaa")[0] {
		t.Errorf("first block %+v", first)
	}
	if second := stored[2]; !second.HasParent || second.Parent != 1 {
		t.Errorf("second block %+v", second)
	}
	if len(removed) == 0 {
		t.Fatal("no block evicted from a 64-block cache holding 80 blocks of prompts")
	}
	for h := range removed {
		if h > 1000 {
			t.Errorf("evicted block %d of the newer prompt, want the older one's", h)
		}
	}
	if again := sim.Engine().TakeKVEvents(nil); len(again) != 0 {
		t.Errorf("%d events taken twice", len(again))
	}
}

func TestKVEventsBacklogBounded(t *testing.T) {
	cfg := engine.DefaultConfig()
	cfg.KVEvents = true
	sim, err := engine.NewSimulator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Over MaxKVEvents blocks stored with nobody collecting: the backlog is replaced by a clear.
	for p := 0; p*1000 < engine.MaxKVEvents+2000; p++ {
		if _, err := sim.Submit(sim.Now(), kvRequest(p, 999*16)); err != nil {
			t.Fatal(err)
		}
		sim.Run()
	}
	evs := sim.Engine().TakeKVEvents(nil)
	if len(evs) > engine.MaxKVEvents || evs[0].Kind != engine.KVCleared || sim.Engine().KVEventsDropped() == 0 {
		t.Fatalf("%d events, first %+v, dropped %d", len(evs), evs[0], sim.Engine().KVEventsDropped())
	}
}

func TestKVEventsOffRecordsNothing(t *testing.T) {
	sim, err := engine.NewSimulator(engine.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Submit(0, kvRequest(0, 64)); err != nil {
		t.Fatal(err)
	}
	sim.Run()
	if evs := sim.Engine().TakeKVEvents(nil); len(evs) != 0 {
		t.Errorf("%d events with KVEvents off", len(evs))
	}
}
