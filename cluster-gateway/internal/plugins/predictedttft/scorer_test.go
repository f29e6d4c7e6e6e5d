package predictedttft_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/predictedttft"
)

type fixture struct {
	h   *plugintest.Handle
	s   *predictedttft.Scorer
	eps []framework.Endpoint
	// fakes are eps, for setting their state.
	fakes []*plugintest.FakeEndpoint
}

func newFixture(t testing.TB, n int) *fixture {
	t.Helper()
	var fakes []*plugintest.FakeEndpoint
	for i := range n {
		fakes = append(fakes, plugintest.Endpoint(fmt.Sprintf("10.0.0.%d:8000", i+1), "m", 0, 0, 0, plugintest.Epoch))
	}
	eps := plugintest.Endpoints(fakes...)
	h := plugintest.NewHandle(eps...)
	p, err := predictedttft.Factory("ttft", nil, h)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{h: h, s: p.(*predictedttft.Scorer), eps: eps, fakes: fakes}
}

func (f *fixture) scores(prompt int) []float64 {
	out := make([]float64, len(f.eps))
	f.s.Score(
		context.Background(),
		&framework.CycleState{Now: f.h.Now()},
		&framework.Request{PromptTokens: prompt},
		f.eps,
		out,
	)
	return out
}

// serve routes a request of prompt tokens to endpoint i and reports a response with ttft.
func (f *fixture) serve(i, prompt int, ttft, itl time.Duration) {
	req := &framework.Request{PromptTokens: prompt}
	f.s.PreRequest(context.Background(), req, &framework.Result{Targets: []framework.Endpoint{f.eps[i]}})
	f.s.FirstToken(
		context.Background(),
		req,
		&framework.ResponseInfo{Endpoint: f.eps[i], Status: 200, TTFT: ttft, CachedTokens: -1},
	)
	f.s.PostResponse(context.Background(), req, &framework.ResponseInfo{
		Endpoint: f.eps[i], Status: 200, TTFT: ttft, MeanITL: itl, OutputTokens: 100, PromptTokens: prompt, CachedTokens: -1,
	})
}

func TestNeutralPriorScoresIdlePodsEqually(t *testing.T) {
	f := newFixture(t, 3)
	for _, s := range f.scores(1000) {
		if s != 1 {
			t.Fatalf("scores %v, want all 1 before any measurement", f.scores(1000))
		}
	}
}

func TestLoadLowersScore(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *fixture)
	}{
		{"scraped queue", func(f *fixture) { plugintest.SetLoad(f.fakes[0], 4, 0, 0, f.h.Now()) }},
		{"in flight before any scrape shows it", func(f *fixture) { f.fakes[0].AddInFlight(4) }},
		{"dispatched since the scrape", func(f *fixture) {
			f.h.Advance(time.Millisecond)
			for range 4 {
				f.s.PreRequest(context.Background(), &framework.Request{PromptTokens: 1000}, &framework.Result{Targets: f.eps[:1]})
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 2)
			tt.setup(f)
			s := f.scores(1000)
			if !(s[0] < 0.5 && s[1] == 1) {
				t.Fatalf("scores %v: the loaded pod must score well below the idle one", s)
			}
		})
	}
}

func TestLearnsPerPodSpeed(t *testing.T) {
	f := newFixture(t, 3)
	// Pod 0 prefills 1,000 tokens in ~35ms, pod 1 in ~335ms; pod 2 is never measured.
	for range 10 {
		f.serve(0, 1000, 60*time.Millisecond, 10*time.Millisecond)
		f.serve(1, 1000, 600*time.Millisecond, 40*time.Millisecond)
	}
	s := f.scores(1000)
	if !(s[0] == 1 && s[1] < 0.2) {
		t.Fatalf("scores %v: the slow pod must score far below the fast one", s)
	}
	if !(s[2] < s[0] && s[2] > s[1]) {
		t.Fatalf("scores %v: an unmeasured pod must get the fleet's mean (between fast and slow)", s)
	}
	fast, slow := f.s.Predict(f.eps[0], 1000, 0), f.s.Predict(f.eps[1], 1000, 0)
	if fast < 20*time.Millisecond || fast > 100*time.Millisecond || slow < 300*time.Millisecond ||
		slow > 1200*time.Millisecond {
		t.Fatalf("predicted TTFT fast %v slow %v, want near the observed 60ms and 600ms", fast, slow)
	}
}

func TestFailedResponsesTeachNothing(t *testing.T) {
	f := newFixture(t, 2)
	req := &framework.Request{PromptTokens: 1000}
	f.s.PreRequest(context.Background(), req, &framework.Result{Targets: f.eps[:1]})
	f.s.PostResponse(
		context.Background(),
		req,
		&framework.ResponseInfo{Endpoint: f.eps[0], Status: 503, TTFT: 5 * time.Second},
	)
	f.h.Advance(time.Hour) // the dispatch no longer counts as load
	plugintest.SetLoad(f.fakes[0], 0, 0, 0, f.h.Now())
	plugintest.SetLoad(f.fakes[1], 0, 0, 0, f.h.Now())
	if s := f.scores(1000); s[0] != 1 || s[1] != 1 {
		t.Fatalf("scores %v after a 503, want no learning", s)
	}
}

// TestClientStalledTeachesNothing: answers whose client held them back (ClientStalled) measure
// the client's pace: however slow they look, at the first token or at the end, the pod keeps
// the speed its other answers showed.
func TestClientStalledTeachesNothing(t *testing.T) {
	f := newFixture(t, 2)
	for range 10 {
		f.serve(0, 1000, 60*time.Millisecond, 10*time.Millisecond)
		f.serve(1, 1000, 60*time.Millisecond, 10*time.Millisecond)
	}
	before := f.s.Predict(f.eps[0], 1000, 0)
	for range 50 { // a slow client's answers on pod 0: 100 times the time to first token and ITL
		req := &framework.Request{PromptTokens: 1000}
		f.s.PreRequest(context.Background(), req, &framework.Result{Targets: f.eps[:1]})
		stalled := &framework.ResponseInfo{Endpoint: f.eps[0], Status: 200, TTFT: 6 * time.Second,
			CachedTokens: -1, ClientStalled: true}
		f.s.FirstToken(context.Background(), req, stalled)
		stalled.MeanITL, stalled.OutputTokens, stalled.PromptTokens = time.Second, 100, 1000
		f.s.PostResponse(context.Background(), req, stalled)
	}
	f.h.Advance(time.Hour) // the dispatches no longer count as load
	plugintest.SetLoad(f.fakes[0], 0, 0, 0, f.h.Now())
	plugintest.SetLoad(f.fakes[1], 0, 0, 0, f.h.Now())
	if after := f.s.Predict(f.eps[0], 1000, 0); after != before {
		t.Fatalf("predicted TTFT on the pod went from %v to %v after stalled answers, want unchanged", before, after)
	}
	if s := f.scores(1000); s[0] != s[1] {
		t.Fatalf("scores %v: stalled answers made the pod look slower than its twin", s)
	}
}

func TestRemovedEndpointForgotten(t *testing.T) {
	f := newFixture(t, 2)
	for range 5 {
		f.serve(1, 1000, time.Second, 50*time.Millisecond)
	}
	gone := f.eps[1]
	f.h.Remove(gone.Meta().Address)
	if p := f.s.Predict(gone, 1000, 0); p > 500*time.Millisecond {
		t.Fatalf("removed endpoint still predicted slow (%v): its learned state was kept", p)
	}
}

func TestFactoryParameters(t *testing.T) {
	tests := []struct{ params, wantErr string }{
		{`{"overhead": "2ms", "priorPrefillTokensPerSecond": 20000, "priorITL": "15ms", "alpha": 0.3}`, ""},
		{`{"alpha": 2}`, "alpha"},
		{`{"priorITL": "-1ms"}`, "priorITL"},
		{`{"overhead": 5}`, "duration"},
		{`{"speed": 1}`, "unknown field"},
	}
	for _, tt := range tests {
		_, err := predictedttft.Factory("p", json.RawMessage(tt.params), nil)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: err = %v, want %q", tt.params, err, tt.wantErr)
		}
	}
}

func TestScoresInUnitRange(t *testing.T) {
	f := newFixture(t, 4)
	for i, e := range f.fakes {
		plugintest.SetLoad(e, i*3, i*10, 0.2, f.h.Now())
	}
	for _, s := range f.scores(500) {
		if s <= 0 || s > 1 || math.IsNaN(s) {
			t.Fatalf("score %v outside (0,1]", s)
		}
	}
}

func TestPrefillBacklogFromFirstTokens(t *testing.T) {
	f := newFixture(t, 2)
	f.serve(0, 1000, 60*time.Millisecond, 10*time.Millisecond) // enables first-token accounting
	f.serve(1, 1000, 60*time.Millisecond, 10*time.Millisecond)
	// A 4,000-token request to pod 0 is in flight and has not produced its first token.
	long := &framework.Request{PromptTokens: 4000}
	f.s.PreRequest(context.Background(), long, &framework.Result{Targets: f.eps[:1]})
	f.fakes[0].AddInFlight(1)
	before := f.s.Predict(f.eps[0], 1000, 0)
	f.s.FirstToken(
		context.Background(),
		long,
		&framework.ResponseInfo{Endpoint: f.eps[0], Status: 200, TTFT: 200 * time.Millisecond, CachedTokens: -1},
	)
	after := f.s.Predict(f.eps[0], 1000, 0)
	if before-after < 50*time.Millisecond {
		t.Fatalf("prediction %v before the long request's first token, %v after: its backlog was not counted", before, after)
	}
}

func TestRetryOnFallbackTeachesNothing(t *testing.T) {
	f := newFixture(t, 2)
	req := &framework.Request{PromptTokens: 1000}
	f.s.PreRequest(context.Background(), req, &framework.Result{Targets: f.eps})
	// The answer came from the fallback (eps[1]), not the endpoint the prediction was for.
	f.s.PostResponse(
		context.Background(),
		req,
		&framework.ResponseInfo{Endpoint: f.eps[1], Status: 200, TTFT: 5 * time.Second, PromptTokens: 1000, CachedTokens: -1},
	)
	f.h.Advance(time.Hour)
	for _, e := range f.fakes {
		plugintest.SetLoad(e, 0, 0, 0, f.h.Now())
	}
	if s := f.scores(1000); s[0] != 1 || s[1] != 1 {
		t.Fatalf("scores %v, want no learning from a fallback's answer", s)
	}
}

// A request still waiting for its first token is counted by what it has left to prefill, at the
// rate the pod has been measured to work through a backlog.
func TestBacklogDrainsWhileWaiting(t *testing.T) {
	f := newFixture(t, 1)
	ctx := context.Background()
	// A lone request prefills 1,000 tokens in about 35ms (TestLearnsPerPodSpeed): its first
	// token comes 60ms after it is sent.
	for range 10 {
		r := &framework.Request{PromptTokens: 1000}
		f.s.PreRequest(ctx, r, &framework.Result{Targets: f.eps})
		f.h.Advance(60 * time.Millisecond)
		f.s.FirstToken(
			ctx,
			r,
			&framework.ResponseInfo{Endpoint: f.eps[0], Status: 200, TTFT: 60 * time.Millisecond, CachedTokens: -1},
		)
		f.s.PostResponse(ctx, r, &framework.ResponseInfo{Endpoint: f.eps[0], Status: 200, TTFT: 60 * time.Millisecond,
			MeanITL: 10 * time.Millisecond, OutputTokens: 100, PromptTokens: 1000, CachedTokens: -1})
		f.h.Advance(time.Second)
	}
	// Measure the drain rate: bursts of 4 requests of 1,000 tokens, first tokens 250ms apart
	// (4,000 tokens/s, slower than a lone request: a busy engine shares its steps), enough of
	// them for the lone requests' samples to fade.
	for range 10 {
		reqs := make([]*framework.Request, 4)
		for i := range reqs {
			reqs[i] = &framework.Request{PromptTokens: 1000}
			f.s.PreRequest(ctx, reqs[i], &framework.Result{Targets: f.eps})
			f.fakes[0].AddInFlight(1)
		}
		for _, r := range reqs {
			f.h.Advance(250 * time.Millisecond)
			f.s.FirstToken(
				ctx,
				r,
				&framework.ResponseInfo{Endpoint: f.eps[0], Status: 200, TTFT: 60 * time.Millisecond, CachedTokens: -1},
			)
			f.s.PostResponse(
				ctx,
				r,
				&framework.ResponseInfo{
					Endpoint:     f.eps[0],
					Status:       200,
					TTFT:         60 * time.Millisecond,
					PromptTokens: 1000,
					CachedTokens: -1,
				},
			)
			f.fakes[0].AddInFlight(-1)
		}
		f.h.Advance(time.Second)
	}
	// An 8,000-token request is sent; its prefill takes 2s at the drain rate. The pod is scraped
	// with it waiting.
	long := &framework.Request{PromptTokens: 8000}
	f.s.PreRequest(ctx, long, &framework.Result{Targets: f.eps})
	f.fakes[0].AddInFlight(1)
	plugintest.SetLoad(f.fakes[0], 1, 0, 0, f.h.Now())
	at0 := f.s.Predict(f.eps[0], 1000, 0)
	// overhead 5ms + 8,000 then 1,000 tokens at 4,000 tokens/s + one 10ms step (the learned ITL).
	if want := 2265 * time.Millisecond; at0 < want-30*time.Millisecond || at0 > want+30*time.Millisecond {
		t.Fatalf("predicted %v behind the long request, want about %v", at0, want)
	}
	f.h.Advance(time.Second)
	at1 := f.s.Predict(f.eps[0], 1000, 0)
	f.h.Advance(10 * time.Second)
	late := f.s.Predict(f.eps[0], 1000, 0)
	// Half of the 8,000 tokens are left after 1s; when overdue, a tenth is still assumed left
	// (within 3%: the lone requests' samples have not quite faded).
	if d := at0 - at1; d < 970*time.Millisecond || d > 1030*time.Millisecond {
		t.Fatalf("predicted %v, then %v a second later: want 1s less (half of the backlog drained)", at0, at1)
	}
	if d := at1 - late; d < 770*time.Millisecond || d > 830*time.Millisecond {
		t.Fatalf("predicted %v at 1s, %v when overdue: want 0.8s less (800 tokens left of 4,000)", at1, late)
	}
}

// Until the pod's drain rate is measured, a request waiting for its first token counts whole: at
// a guessed rate, a slow pod's backlog would melt on paper and draw more requests.
func TestBacklogKeptWholeUntilDrainMeasured(t *testing.T) {
	f := newFixture(t, 1)
	ctx := context.Background()
	f.serve(0, 1000, 60*time.Millisecond, 10*time.Millisecond) // first-token reports on, no drain yet
	long := &framework.Request{PromptTokens: 8000}
	f.s.PreRequest(ctx, long, &framework.Result{Targets: f.eps})
	f.fakes[0].AddInFlight(1)
	plugintest.SetLoad(f.fakes[0], 1, 0, 0, f.h.Now())
	before := f.s.Predict(f.eps[0], 1000, 0)
	f.h.Advance(5 * time.Second)
	if after := f.s.Predict(f.eps[0], 1000, 0); after != before {
		t.Fatalf("predicted %v, then %v 5s later: the backlog drained at an unmeasured rate", before, after)
	}
}

// Requests sent to a pod together are prefilled in the same engine steps, so their first tokens
// come together, late for each one alone. Learning from them as if each had had the pod to itself
// would read the pod as several times slower than it is and send traffic away from it for long.
func TestBatchSentTogetherIsNotASlowPod(t *testing.T) {
	f := newFixture(t, 1)
	ctx := context.Background()
	for range 10 {
		f.serve(0, 1000, 60*time.Millisecond, 10*time.Millisecond)
	}
	before := f.s.Predict(f.eps[0], 1000, 0)
	// Ten requests at once; the engine prefills them together and all first tokens come 350ms later.
	reqs := make([]*framework.Request, 10)
	for i := range reqs {
		reqs[i] = &framework.Request{PromptTokens: 1000}
		f.s.PreRequest(ctx, reqs[i], &framework.Result{Targets: f.eps})
		f.fakes[0].AddInFlight(1)
	}
	f.h.Advance(350 * time.Millisecond)
	for _, r := range reqs {
		f.s.FirstToken(
			ctx,
			r,
			&framework.ResponseInfo{Endpoint: f.eps[0], Status: 200, TTFT: 350 * time.Millisecond, CachedTokens: -1},
		)
		f.s.PostResponse(ctx, r, &framework.ResponseInfo{
			Endpoint:     f.eps[0],
			Status:       200,
			TTFT:         350 * time.Millisecond,
			MeanITL:      10 * time.Millisecond,
			OutputTokens: 100,
			PromptTokens: 1000,
			CachedTokens: -1,
		})
		f.fakes[0].AddInFlight(-1)
	}
	after := f.s.Predict(f.eps[0], 1000, 0)
	if float64(after) > 1.25*float64(before) {
		t.Fatalf("a lone request's predicted TTFT went from %v to %v after a batch sent together", before, after)
	}
}

// How much a busy batch lengthens the step is learned from each pod's responses and the running
// batch scraped around them, not assumed: on a pod whose ITL grows from 8 to 15 ms between batch 1
// and 64 a full batch adds about 7 ms to the prediction, on one whose ITL stays near 9 ms (BLIS's
// fit of vLLM on an H100: 6 µs per decoding request) well under a millisecond.
func TestBatchCostLearnedPerPod(t *testing.T) {
	f := newFixture(t, 2)
	itl := []func(batch int) time.Duration{
		func(b int) time.Duration { return 8*time.Millisecond + time.Duration(b-1)*7*time.Millisecond/63 },
		func(b int) time.Duration { return 9100*time.Microsecond + time.Duration(b)*6*time.Microsecond },
	}
	for i := range 40 {
		b := []int{1, 8, 16, 32, 48, 64}[i%6]
		for p := range f.eps {
			plugintest.SetLoad(f.fakes[p], 0, b, 0, f.h.Now())
			f.serve(p, 1000, 60*time.Millisecond, itl[p](b))
		}
		f.h.Advance(time.Second)
	}
	for p, want := range []time.Duration{7 * time.Millisecond, 400 * time.Microsecond} {
		plugintest.SetLoad(f.fakes[p], 0, 0, 0, f.h.Now())
		idle := f.s.Predict(f.eps[p], 1000, 0)
		plugintest.SetLoad(f.fakes[p], 0, 64, 0, f.h.Now())
		busy := f.s.Predict(f.eps[p], 1000, 0)
		if d := busy - idle; d < want-want/5-100*time.Microsecond || d > want+want/5+100*time.Microsecond {
			t.Errorf("pod %d: a batch of 64 adds %v to the prediction, want about %v", p, d, want)
		}
	}
}
