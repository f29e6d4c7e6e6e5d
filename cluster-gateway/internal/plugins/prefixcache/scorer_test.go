package prefixcache_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/prefixcache"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
)

// prompt is blocks full 64-byte blocks: the first shared blocks from "sys", the rest from tag.
func prompt(shared, blocks int, tag string) *framework.Request {
	var b strings.Builder
	for i := 0; i < blocks; i++ {
		src := "sys"
		if i >= shared {
			src = tag
		}
		fmt.Fprintf(&b, "%-64s", fmt.Sprintf("%s block %d", src, i))
	}
	return &framework.Request{
		Model:        "m",
		PromptTokens: blocks * 16,
		PrefixHashes: prefix.Hashes(nil, "m", []byte(b.String()), 0),
	}
}

type fixture struct {
	h   *plugintest.Handle
	s   *prefixcache.Scorer
	eps []framework.Endpoint
}

func newFixture(t *testing.T, params string) *fixture {
	t.Helper()
	var eps []framework.Endpoint
	for i := range 3 {
		eps = append(eps, plugintest.Endpoint(fmt.Sprintf("10.0.0.%d:8000", i+1), "m", 0, 0, 0, plugintest.Epoch))
	}
	h := plugintest.NewHandle(eps...)
	var raw json.RawMessage
	if params != "" {
		raw = json.RawMessage(params)
	}
	p, err := prefixcache.Factory("prefix", raw, h)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{h: h, s: p.(*prefixcache.Scorer), eps: eps}
}

func (f *fixture) route(req *framework.Request, to int) {
	f.s.PreRequest(context.Background(), req, &framework.Result{Targets: []framework.Endpoint{f.eps[to]}})
}

func (f *fixture) score(req *framework.Request) []float64 {
	scores := make([]float64, len(f.eps))
	f.s.Score(context.Background(), &framework.CycleState{}, req, f.h.Endpoints(), scores)
	return scores
}

func TestScoreLearnsFromRouting(t *testing.T) {
	tests := []struct {
		name   string
		routed []*framework.Request // routed to endpoint i
		query  *framework.Request
		want   []float64
	}{
		{"nothing routed", nil, prompt(4, 8, "q"), []float64{0, 0, 0}},
		{"same prompt", []*framework.Request{prompt(8, 8, "a")}, prompt(8, 8, "a"), []float64{1, 0, 0}},
		{"shared half", []*framework.Request{prompt(4, 8, "a")}, prompt(4, 8, "b"), []float64{0.5, 0, 0}},
		{
			"longest prefix wins",
			[]*framework.Request{prompt(2, 8, "a"), prompt(6, 8, "b")},
			prompt(8, 8, "c"),
			[]float64{0.25, 0.75, 0},
		},
		{"different first block", []*framework.Request{prompt(0, 8, "x")}, prompt(8, 8, "y"), []float64{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "")
			for i, r := range tt.routed {
				f.route(r, i)
			}
			got := f.score(tt.query)
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("scores %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestMatchInCycleState(t *testing.T) {
	f := newFixture(t, "")
	f.route(prompt(4, 8, "a"), 1)
	cs := &framework.CycleState{}
	eps := f.h.Endpoints()
	f.s.Score(context.Background(), cs, prompt(4, 8, "b"), eps, make([]float64, len(eps)))
	m := prefixcache.ReadMatch(cs)
	if m == nil || m.Total != 8 || m.BlocksFor(eps[1]) != 4 || m.BlocksFor(eps[0]) != 0 {
		t.Fatalf("match = %+v", m)
	}
	cs.Reset()
	if prefixcache.ReadMatch(cs) != nil {
		t.Fatal("match survived Reset")
	}
}

func TestMaxPrefixBlocksToMatch(t *testing.T) {
	f := newFixture(t, `{"maxPrefixBlocksToMatch": 4}`)
	f.route(prompt(8, 8, "a"), 0)
	if got := f.score(prompt(6, 8, "b")); got[0] != 1 {
		t.Fatalf("score %v, want 1 (only the first 4 blocks count)", got[0])
	}
}

func TestLRUCapacityEvictsOldest(t *testing.T) {
	f := newFixture(t, `{"lruCapacityPerServer": 8, "autoTune": false}`)
	first, second := prompt(0, 8, "first"), prompt(0, 8, "second")
	f.route(first, 0)
	f.route(second, 0)
	if got := f.score(first); got[0] != 0 {
		t.Fatalf("first prompt still scores %v after 8 newer blocks in a capacity-8 LRU", got[0])
	}
	if got := f.score(second); got[0] != 1 {
		t.Fatalf("second prompt scores %v, want 1", got[0])
	}
}

func TestRemovedEndpointIsForgotten(t *testing.T) {
	f := newFixture(t, "")
	req := prompt(8, 8, "a")
	f.route(req, 2)
	f.h.Remove(f.eps[2].Meta().Address)
	f.h.Set(f.eps...) // the same address comes back as a fresh pod: nothing cached
	if got := f.score(req); got[2] != 0 {
		t.Fatalf("removed endpoint still scores %v", got[2])
	}
}

func TestCachedTokensCorrectTheIndex(t *testing.T) {
	f := newFixture(t, `{"lruCapacityPerServer": 1000, "autoTune": false}`)
	ctx := context.Background()
	// Fill pod 0 with 40 prompts of 8 blocks (320 entries).
	for i := range 40 {
		f.route(prompt(0, 8, fmt.Sprint("p", i)), 0)
	}
	// A request predicted to hit 8 blocks on pod 0 reports no cached tokens: the pod keeps less
	// than the index believes, so its oldest entries go.
	req := prompt(0, 8, "p39")
	f.route(req, 0)
	f.s.PostResponse(
		ctx,
		req,
		&framework.ResponseInfo{Endpoint: f.eps[0], Status: 200, CachedTokens: 0, PromptTokens: 128},
	)
	if got := f.score(prompt(0, 8, "p0")); got[0] != 0 {
		t.Fatalf("oldest prompt still scores %v after a miss shrank the index", got[0])
	}
	if got := f.score(prompt(0, 8, "p39")); got[0] != 1 {
		t.Fatalf("newest prompt scores %v, want 1", got[0])
	}
}

func TestFactoryParameters(t *testing.T) {
	tests := []struct {
		params  string
		wantErr string
	}{
		{`{"blockSize": 64, "maxPrefixBlocksToMatch": 256, "lruCapacityPerServer": 31250}`, ""},
		{`{"autoTune": true, "blockSizeTokens": 5, "maxPrefixTokensToMatch": 4096}`, ""},
		{`{"lruCapacityPerServer": -1}`, "must be >= 0"},
		{`{"lruCapacity": 10}`, "unknown field"},
	}
	for _, tt := range tests {
		_, err := prefixcache.Factory("p", json.RawMessage(tt.params), plugintest.NewHandle())
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: err = %v, want %q", tt.params, err, tt.wantErr)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	f := newFixture(t, `{"lruCapacityPerServer": 64, "autoTune": false}`)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				req := prompt(4, 8, fmt.Sprint(g, i))
				f.score(req)
				f.route(req, i%3)
				f.s.PostResponse(
					context.Background(),
					req,
					&framework.ResponseInfo{Endpoint: f.eps[i%3], Status: 200, CachedTokens: i % 100},
				)
			}
		}()
	}
	wg.Wait()
}
