package pdhandler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/pdhandler"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

// pod is an endpoint with role role ("" for no label), scraped with queue waiting and running
// sequences.
func pod(h *plugintest.Handle, addr, role string, queue, running int) *plugintest.FakeEndpoint {
	var labels map[string]string
	if role != "" {
		labels = map[string]string{framework.RoleLabel: role}
	}
	e := plugintest.NewLabeledEndpoint(addr, labels)
	plugintest.SetLoad(e, queue, running, 0.1, h.Now())
	return e
}

// selective builds a selective handler at 10,000 tokens/s, 50 ms ITL budget, 5 µs per token.
func selective(t *testing.T, h *plugintest.Handle, extra string) *pdhandler.Handler {
	t.Helper()
	p, err := pdhandler.Factory("pd", []byte(`{"selective": true`+extra+`}`), h)
	if err != nil {
		t.Fatal(err)
	}
	return p.(*pdhandler.Handler)
}

// splits reports whether hd splits req between decode d and prefill p.
func splits(hd *pdhandler.Handler, req *framework.Request, d, p framework.Endpoint) bool {
	_, pays := hd.SplitPays(context.Background(), nil, nil, req, d, []framework.Endpoint{p})
	return pays
}

func request(tokens int) *framework.Request {
	return &framework.Request{ID: "r", Model: "m", BaseModel: "m", PromptTokens: tokens}
}

// TestSplitPays: the split is weighed against local prefill from the pods' state. At 10,000
// tokens/s a 4,000-token prompt takes 0.4 s and its KV transfer 20 ms; a decode pod with a
// running batch is charged 0.4 s per running sequence for prefilling it (over the 50 ms budget).
func TestSplitPays(t *testing.T) {
	tests := []struct {
		name                       string
		tokens                     int
		decodeRunning, decodeQueue int
		prefillRole                string
		prefillQueue, prefillRun   int
		want                       bool
	}{
		// Idle decode pod: nobody to stall, and local skips the transfer.
		{"idle decode pod prefills itself", 4000, 0, 0, "prefill", 0, 0, false},
		// 2 running: local 0.4 + 0.8 stall = 1.2 s against 0.42 s.
		{"busy decode pod, idle prefill pod", 4000, 2, 0, "prefill", 0, 0, true},
		// Prefill pod with 4 prompts waiting (16,000 tokens, 1.6 s ahead): 2.02 s against 1.2 s.
		{"prefill pod backed up", 4000, 2, 0, "prefill", 4, 0, false},
		// A prefill pod's running requests are prefills too: 3 running + 1 waiting.
		{"prefill pod busy prefilling", 4000, 2, 0, "prefill", 1, 3, false},
		// 300 tokens stall 30 ms, within the budget: no charge, local skips the transfer.
		{"short prompt within the ITL budget", 300, 20, 0, "prefill", 0, 0, false},
		// Same prompt, decode pod with prefills of its own waiting (2 × 300 tokens ahead).
		{"short prompt, decode pod queued", 300, 20, 2, "prefill", 0, 0, true},
		// A both pod that prefills is charged its own batch's stall: 0.42 + 8 × 0.4 s.
		{"both prefill pod with a batch", 4000, 2, 0, "both", 0, 8, false},
		{"both prefill pod without a batch", 4000, 2, 0, "both", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := plugintest.NewHandle()
			d := pod(h, "10.0.0.1:8000", "decode", tt.decodeQueue, tt.decodeRunning)
			p := pod(h, "10.0.0.2:8000", tt.prefillRole, tt.prefillQueue, tt.prefillRun)
			hd := selective(t, h, "")
			if got := splits(hd, request(tt.tokens), d, p); got != tt.want {
				t.Fatalf("SplitPays = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNotSelectiveAlwaysSplits: without selective the handler is llm-d's: every prompt at or
// above the threshold is split, however backed up the prefill pods are.
func TestNotSelectiveAlwaysSplits(t *testing.T) {
	h := plugintest.NewHandle()
	d := pod(h, "10.0.0.1:8000", "decode", 0, 0)
	p := pod(h, "10.0.0.2:8000", "prefill", 50, 8)
	hd := pdhandler.New("pd", pdhandler.DefaultParams(), h)
	if !splits(hd, request(4000), d, p) {
		t.Fatal("a handler without selective kept a prompt on the decode pod")
	}
}

// TestBacklogFromRoutedRequests: the handler counts the prefills it sent to a pod until their
// first token, so a burst backs the prefill pod up before any scrape shows it, and the burst's
// later requests prefill locally; first tokens drain the backlog again.
func TestBacklogFromRoutedRequests(t *testing.T) {
	h := plugintest.NewHandle()
	d := pod(h, "10.0.0.1:8000", "decode", 0, 3)
	p := pod(h, "10.0.0.2:8000", "prefill", 0, 0)
	hd := selective(t, h, "")
	ctx := context.Background()
	var sent []*framework.Request
	for i := range 3 {
		req := request(4000)
		req.ID = fmt.Sprint(i)
		if !splits(hd, req, d, p) {
			t.Fatalf("request %d: local prefill with %d prefills ahead on the prefill pod", i, i)
		}
		res := &framework.Result{Targets: []framework.Endpoint{d}, Disaggregation: framework.PDSplit,
			Prefill: &framework.Result{Targets: []framework.Endpoint{p}}}
		hd.PreRequest(ctx, req, res)
		sent = append(sent, req)
	}
	// 3 × 4,000 tokens ahead: 1.62 s split against 1.6 s local (0.4 s and 3 × 0.4 s stall).
	if splits(hd, request(4000), d, p) {
		t.Fatal("split onto a prefill pod with 1.2 s of prefill ahead")
	}
	h.Advance(time.Second)
	for _, req := range sent[:2] {
		hd.FirstToken(ctx, req, &framework.ResponseInfo{Endpoint: d, Status: 200, TTFT: time.Second})
	}
	if !splits(hd, request(4000), d, p) {
		t.Fatal("local prefill after the prefill pod's backlog drained")
	}
	// A request that fails leaves the backlog too.
	hd.PostResponse(ctx, sent[2], &framework.ResponseInfo{Endpoint: d, Status: 502})
	h.Remove(p.Meta().Address)
}

// TestLearnsPrefillSpeed: the speeds come from the first tokens of the prefills each pod ran.
// With 4 prompts waiting on the prefill pod the 10,000 tokens/s prior says local (2.02 s split
// against 1.2 s); once the prefill pod is measured at 40,000 tokens/s (first tokens 0.1 s apart
// for 4,000-token prompts) and the decode pod at 10,000, the split costs 0.52 s and pays.
func TestLearnsPrefillSpeed(t *testing.T) {
	h := plugintest.NewHandle()
	d := pod(h, "10.0.0.1:8000", "decode", 0, 2)
	p := pod(h, "10.0.0.2:8000", "prefill", 4, 0)
	hd := selective(t, h, "")
	ctx := context.Background()
	if splits(hd, request(4000), d, p) {
		t.Fatal("split onto a backed-up prefill pod before any speed was measured")
	}
	split := &framework.Result{Targets: []framework.Endpoint{d}, Disaggregation: framework.PDSplit,
		Prefill: &framework.Result{Targets: []framework.Endpoint{p}}}
	local := &framework.Result{Targets: []framework.Endpoint{d}, Disaggregation: framework.PDLocalPrefill}
	learn := func(res *framework.Result, took time.Duration) {
		for i := range 8 {
			req := request(4000)
			req.ID = fmt.Sprint(i)
			hd.PreRequest(ctx, req, res)
			h.Advance(took)
			hd.FirstToken(ctx, req, &framework.ResponseInfo{Endpoint: d, Status: 200, TTFT: took})
		}
	}
	learn(split, 100*time.Millisecond)
	learn(local, 400*time.Millisecond)
	plugintest.SetLoad(p, 4, 0, 0.1, h.Now())
	plugintest.SetLoad(d, 0, 2, 0.1, h.Now())
	if !splits(hd, request(4000), d, p) {
		t.Fatal("local prefill although the prefill pod was measured fast enough")
	}
}

// TestPicksLeastBackedUpPrefill: among the prefill profile's targets the handler names the one
// that computes the prompt soonest, by the prefills it sent since the last scrape (a burst
// within one scrape interval does not pile onto the profile's first pick).
func TestPicksLeastBackedUpPrefill(t *testing.T) {
	h := plugintest.NewHandle()
	d := pod(h, "10.0.0.1:8000", "decode", 0, 8)
	p1 := pod(h, "10.0.0.2:8000", "prefill", 0, 0)
	p2 := pod(h, "10.0.0.3:8000", "prefill", 0, 0)
	hd := selective(t, h, "")
	ctx := context.Background()
	prefills := []framework.Endpoint{p1, p2}
	for i, want := range []int{0, 1, 0, 1} {
		req := request(4000)
		req.ID = fmt.Sprint(i)
		best, pays := hd.SplitPays(ctx, nil, nil, req, d, prefills)
		if best != want || !pays {
			t.Fatalf("request %d: prefill %d (split %v), want %d", i, best, pays, want)
		}
		hd.PreRequest(ctx, req, &framework.Result{Targets: []framework.Endpoint{d}, Disaggregation: framework.PDSplit,
			Prefill: &framework.Result{Targets: []framework.Endpoint{prefills[best]}}})
	}
}

// TestSpeedFromConcurrentPrefills: an engine prefills prompts sent together in the same steps,
// so their first tokens come close together. Two 4,000-token prefills sent at once and done
// after 0.4 s and 0.401 s measure 8,000 tokens in 0.401 s (about 20,000 tokens/s), not the
// 4,000,000 tokens/s the second's last millisecond alone would say: the pod still looks backed
// up to a split that would wait behind 3 more such prompts.
func TestSpeedFromConcurrentPrefills(t *testing.T) {
	h := plugintest.NewHandle()
	d := pod(h, "10.0.0.1:8000", "decode", 0, 20)
	p := pod(h, "10.0.0.2:8000", "prefill", 0, 0)
	hd := selective(t, h, "")
	ctx := context.Background()
	split := &framework.Result{Targets: []framework.Endpoint{d}, Disaggregation: framework.PDSplit,
		Prefill: &framework.Result{Targets: []framework.Endpoint{p}}}
	a, b := request(4000), request(4000)
	hd.PreRequest(ctx, a, split)
	hd.PreRequest(ctx, b, split)
	h.Advance(400 * time.Millisecond)
	hd.FirstToken(ctx, a, &framework.ResponseInfo{Endpoint: d, Status: 200, TTFT: 400 * time.Millisecond})
	h.Advance(time.Millisecond)
	hd.FirstToken(ctx, b, &framework.ResponseInfo{Endpoint: d, Status: 200, TTFT: 401 * time.Millisecond})
	// The decode pod prefills at the fleet's 20,000 tokens/s: 0.2 s and a 20 × 0.2 s stall, 4.2 s.
	// The prefill pod, 20 prompts waiting: 84,000 tokens at 20,000/s, 4.2 s and the transfer.
	plugintest.SetLoad(p, 20, 0, 0.1, h.Now())
	if splits(hd, request(4000), d, p) {
		t.Fatal("split onto a prefill pod whose speed was read from two prefills finishing together")
	}
	plugintest.SetLoad(p, 18, 0, 0.1, h.Now()) // 3.8 s and the transfer: the split pays
	if !splits(hd, request(4000), d, p) {
		t.Fatal("local prefill though the split costs less")
	}
}
