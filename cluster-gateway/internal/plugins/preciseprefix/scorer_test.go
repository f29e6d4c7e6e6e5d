package preciseprefix

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/contract"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/kvevents"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
)

// fakeApproximate stands in for prefix-cache-scorer (plugins do not import each other): it
// scores every endpoint 0.5, so a fallback shows in the scores.
type fakeApproximate struct{}

func (fakeApproximate) TypedName() framework.TypedName {
	return framework.TypedName{Type: ApproximateType}
}

func (fakeApproximate) Score(
	_ context.Context,
	_ *framework.CycleState,
	_ *framework.Request,
	_ []framework.Endpoint,
	scores []float64,
) {
	for i := range scores {
		scores[i] = 0.5
	}
}
func (fakeApproximate) PreRequest(context.Context, *framework.Request, *framework.Result) {}
func (fakeApproximate) PostResponse(context.Context, *framework.Request, *framework.ResponseInfo) {
}

func init() {
	framework.Register(ApproximateType, func(string, json.RawMessage, framework.Handle) (framework.Plugin, error) {
		return fakeApproximate{}, nil
	})
}

// TestHashMatchesCanonicalCBOR checks the chain against an independent canonical CBOR encoder
// (what vLLM's cbor2.dumps(..., canonical=True) writes).
func TestHashMatchesCanonicalCBOR(t *testing.T) {
	enc, err := cbor.CanonicalEncOptions().EncMode()
	if err != nil {
		t.Fatal(err)
	}
	tokens := make([]int64, 40)
	for i := range tokens {
		tokens[i] = int64(i * 7919 % 150000)
	}
	for _, tc := range []struct{ seed, adapter string }{{"", ""}, {"42", ""}, {"42", "sql-lora"}} {
		seedBytes, _ := enc.Marshal(tc.seed)
		parent := sha256.Sum256(seedBytes)
		var want []uint64
		for i := 0; (i+1)*16 <= len(tokens); i++ {
			var extra any
			if tc.adapter != "" {
				extra = []any{tc.adapter}
			}
			b, err := enc.Marshal([]any{parent[:], tokens[i*16 : (i+1)*16], extra})
			if err != nil {
				t.Fatal(err)
			}
			parent = sha256.Sum256(b)
			want = append(want, binary.BigEndian.Uint64(parent[24:]))
		}
		got := newHasher(tc.seed).chain(nil, tokens, 16, 100, tc.adapter)
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("seed %q adapter %q: chain %x, want %x", tc.seed, tc.adapter, got, want)
		}
	}
}

type fixture struct {
	idx       *kvevents.Index
	resident  *kvevents.ResidentPrefixes
	handle    *serviceHandle
	scorer    *Scorer
	a, b      *plugintest.FakeEndpoint
	tokenized atomic.Int32
	reg       *prometheus.Registry
}

func newFixture(t *testing.T, params string, status int) *fixture {
	t.Helper()
	f := &fixture{idx: kvevents.NewIndex(1 << 20), reg: prometheus.NewRegistry()}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.tokenized.Add(1)
		var body struct {
			Model  string `json:"model"`
			Prompt string `json:"prompt"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if r.URL.Path != "/tokenize" || body.Model != "llama" || status != http.StatusOK {
			w.WriteHeader(max(status, http.StatusBadRequest))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"count": len(body.Prompt), "tokens": runeTokens(body.Prompt)})
	}))
	t.Cleanup(srv.Close)
	f.a = plugintest.Endpoint(strings.TrimPrefix(srv.URL, "http://"), "llama", 0, 0, 0, plugintest.Epoch)
	f.b = plugintest.Endpoint("127.0.0.1:1", "llama", 0, 0, 0, plugintest.Epoch)
	h := &serviceHandle{Handle: plugintest.NewHandle(plugintest.Endpoints(f.a, f.b)...), idx: f.idx, reg: f.reg}
	f.resident = kvevents.NewResidentPrefixes(f.idx, h, 1024, 1024)
	h.resident, f.handle = f.resident, h
	p, err := Factory("precise", json.RawMessage(params), h)
	if err != nil {
		t.Fatal(err)
	}
	f.scorer = p.(*Scorer)
	return f
}

// runeTokens is the test tokenizer: one token per byte.
func runeTokens(s string) []int64 {
	out := make([]int64, len(s))
	for i := range len(s) {
		out[i] = int64(s[i])
	}
	return out
}

type serviceHandle struct {
	*plugintest.Handle
	idx      *kvevents.Index
	resident *kvevents.ResidentPrefixes
	reg      prometheus.Registerer
}

func (h *serviceHandle) Service(name string) any {
	switch name {
	case framework.ServiceKVEventsIndex:
		return h.idx
	case framework.ServiceKVResidentPrefixes:
		if h.resident == nil {
			return nil
		}
		return h.resident
	case framework.ServiceRegisterer:
		return h.reg
	}
	return nil
}

func (f *fixture) score(t *testing.T, body string) []float64 {
	t.Helper()
	eps := plugintest.Endpoints(f.a, f.b)
	scores := make([]float64, len(eps))
	req := &framework.Request{ID: "r", Model: "llama", BaseModel: "llama", Body: []byte(body)}
	f.scorer.Score(context.Background(), &framework.CycleState{}, req, eps, scores)
	return scores
}

func (f *fixture) decisions(mode, reason string) float64 {
	return testutil.ToFloat64(f.scorer.metrics.decisions.WithLabelValues(mode, reason))
}

func TestScorePrecise(t *testing.T) {
	f := newFixture(t, `{"hashSeed":"42"}`, http.StatusOK)
	prompt := strings.Repeat("0123456789abcdef", 4) // 64 tokens: 4 blocks
	hashes := newHasher("42").chain(nil, runeTokens(prompt), 16, 100, "")
	// Pod b (not the tokenizer) reports holding the first three blocks.
	f.idx.Apply(
		f.b.Meta().Address,
		&kvevents.Batch{Events: []kvevents.Event{{Kind: kvevents.KindStored, Hashes: hashes[:3]}}},
	)
	body := `{"model":"llama","prompt":"` + prompt + `","max_tokens":5}`
	got := f.score(t, body)
	if got[0] != 0 || got[1] != 0.75 {
		t.Fatalf("scores %v, want [0 0.75]", got)
	}
	f.score(t, body) // cached: no second /tokenize
	if n := f.tokenized.Load(); n != 1 {
		t.Errorf("/tokenize called %d times, want 1", n)
	}
	if f.decisions("precise", reasonPrecise) != 2 {
		t.Errorf("precise decisions = %v, want 2", f.decisions("precise", reasonPrecise))
	}
	// Token ids given in the body are hashed without /tokenize.
	ids, _ := json.Marshal(runeTokens(prompt))
	if got := f.score(t, `{"model":"llama","prompt":`+string(ids)+`}`); got[1] != 0.75 || f.tokenized.Load() != 1 {
		t.Errorf("token-id prompt: scores %v, tokenize calls %d", got, f.tokenized.Load())
	}
}

func TestScoreFallsBack(t *testing.T) {
	tests := []struct {
		name, params, body, reason string
		status                     int
	}{
		{"no tokenizer", `{"tokenizer":"none"}`, `{"model":"llama","prompt":"x"}`, reasonNoTokenizer, 200},
		{
			"too large",
			`{"maxTokenizeBytes":10}`,
			`{"model":"llama","prompt":"` + strings.Repeat("x", 100) + `"}`,
			reasonTooLarge,
			200,
		},
		{"batch of prompts", `{}`, `{"model":"llama","prompt":["a","b"]}`, reasonUnsupported, 200},
		{"no body", `{}`, ``, reasonNoBody, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.params, tc.status)
			if got := f.score(t, tc.body); got[0] != 0.5 {
				t.Errorf("scores %v, want the approximate scorer's", got)
			}
			if f.decisions("approximate", tc.reason) != 1 {
				t.Errorf("approximate/%s decisions = %v, want 1", tc.reason, f.decisions("approximate", tc.reason))
			}
		})
	}
}

func TestTokenizerFailuresPause(t *testing.T) {
	f := newFixture(t, `{}`, http.StatusInternalServerError)
	for i := range failuresToBackoff {
		f.score(t, `{"model":"llama","prompt":"p`+strings.Repeat("x", i)+`"}`)
	}
	if got := f.decisions("approximate", reasonTokenizeError); got != failuresToBackoff {
		t.Fatalf("tokenize failures = %v, want %d", got, failuresToBackoff)
	}
	f.score(t, `{"model":"llama","prompt":"another"}`)
	if got := f.decisions("approximate", reasonBackoff); got != 1 {
		t.Errorf("paused decisions = %v, want 1", got)
	}
}

func TestFactoryNeedsKVEvents(t *testing.T) {
	if _, err := Factory(
		"p",
		nil,
		plugintest.NewHandle(),
	); err == nil ||
		!strings.Contains(err.Error(), "--kv-events-endpoint") {
		t.Errorf("Factory without the index: %v", err)
	}
	h := &serviceHandle{Handle: plugintest.NewHandle(), idx: kvevents.NewIndex(1 << 20)}
	if _, err := Factory("p", json.RawMessage(`{"hashAlgo":"sha256"}`), h); err == nil {
		t.Error("sha256 (pickle) accepted")
	}
	llmd := `{"indexerConfig":{"tokenProcessorConfig":{"blockSize":64,"hashSeed":"7"},` +
		`"kvBlockIndexConfig":{"enableMetrics":true}},"kvEventsConfig":{"zmqEndpoint":"tcp://*:5557"}}`
	p, err := Factory("p", json.RawMessage(llmd), h)
	if err != nil {
		t.Fatal(err)
	}
	if s := p.(*Scorer); s.blockSize != 64 || s.seed != "7" {
		t.Errorf("llm-d parameters: block size %d seed %q", s.blockSize, s.seed)
	}
}

// TestPreRequestSaysScheme checks the decision carries how the request was scored (the
// x-switchyard-prefix-scoring response header).
func TestPreRequestSaysScheme(t *testing.T) {
	tests := []struct{ name, params, body, want string }{
		{"precise", `{}`, `{"model":"llama","prompt":"0123456789abcdef0123"}`, "precise"},
		{"no tokenizer", `{"tokenizer":"none"}`, `{"model":"llama","prompt":"x"}`, "approximate; reason=no_tokenizer"},
		{"batch", `{}`, `{"model":"llama","prompt":["a","b"]}`, "approximate; reason=unsupported_prompt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.params, http.StatusOK)
			eps := plugintest.Endpoints(f.a, f.b)
			cs := &framework.CycleState{}
			req := &framework.Request{ID: "r", Model: "llama", BaseModel: "llama", Body: []byte(tc.body)}
			f.scorer.Score(context.Background(), cs, req, eps, make([]float64, len(eps)))
			res := &framework.Result{Targets: eps[:1], State: cs}
			f.scorer.PreRequest(context.Background(), req, res)
			if res.PrefixScoring != tc.want {
				t.Errorf("PrefixScoring = %q, want %q", res.PrefixScoring, tc.want)
			}
			if _, _, err := contract.ParsePrefixScoring(res.PrefixScoring); err != nil {
				t.Error(err)
			}
		})
	}
}

// route scores a request for prompt and sends it to target, as the scheduler does: Score, then
// PreRequest with the decision. It returns the scores.
func (f *fixture) route(t *testing.T, prompt string, target framework.Endpoint) []float64 {
	t.Helper()
	eps := plugintest.Endpoints(f.a, f.b)
	cs := &framework.CycleState{}
	req := &framework.Request{ID: "r", Model: "llama", BaseModel: "llama",
		Body:         []byte(`{"model":"llama","prompt":"` + prompt + `"}`),
		PrefixHashes: prefix.Hashes(nil, "llama", []byte(prompt), 0)}
	scores := make([]float64, len(eps))
	f.scorer.Score(context.Background(), cs, req, eps, scores)
	if target != nil {
		f.scorer.PreRequest(context.Background(), req, &framework.Result{Targets: []framework.Endpoint{target}, State: cs})
	}
	return scores
}

// TestPendingBlocks checks the blocks of a request just routed count as held by its pod until
// the pod's events say otherwise or the TTL ends, so the next request sharing the prefix sees
// where it will be cached.
func TestPendingBlocks(t *testing.T) {
	prompt := strings.Repeat("0123456789abcdef", 4) // 4 blocks of 16 tokens
	hashes := newHasher("").chain(nil, runeTokens(prompt), 16, 100, "")
	stored := func(f *fixture, evs ...kvevents.Event) { f.idx.Apply(f.b.Meta().Address, &kvevents.Batch{Events: evs}) }
	tests := []struct {
		name  string
		after func(f *fixture)
		want  float64 // pod b's score for the second request
	}{
		{"pending until the events arrive", func(*fixture) {}, 1},
		{"ends at the TTL", func(f *fixture) { f.handle.Advance(time.Second) }, 0},
		{"the events decide once they arrive", func(f *fixture) {
			stored(f, kvevents.Event{Kind: kvevents.KindStored, Hashes: hashes[:2]},
				kvevents.Event{Kind: kvevents.KindRemoved, Hashes: hashes[1:2]})
		}, 0.25},
		{"stored blocks stay after the TTL", func(f *fixture) {
			stored(f, kvevents.Event{Kind: kvevents.KindStored, Hashes: hashes})
			f.handle.Advance(time.Minute)
		}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, `{"pendingTTL":"1s"}`, http.StatusOK)
			for _, e := range []framework.Endpoint{f.a, f.b} { // both pods have published events
				f.idx.Apply(e.Meta().Address, &kvevents.Batch{Events: []kvevents.Event{
					{Kind: kvevents.KindStored, Hashes: []uint64{7}}}})
			}
			if got := f.route(t, prompt+"first", f.b); got[0] != 0 || got[1] != 0 {
				t.Fatalf("first request: scores %v, want none cached", got)
			}
			tc.after(f)
			if got := f.route(t, prompt+"second", nil); got[0] != 0 || got[1] != tc.want {
				t.Errorf("second request: scores %v, want [0 %v]", got, tc.want)
			}
		})
	}
}

// TestResidentPrefixesFromRouting checks what PreRequest records reaches the gossiped sketch
// source only while a pod serving the model holds the blocks.
func TestResidentPrefixesFromRouting(t *testing.T) {
	f := newFixture(t, `{}`, http.StatusOK)
	prompt := strings.Repeat("0123456789abcdef", 16) // 256 bytes: 4 text blocks, 16 KV blocks
	kv := newHasher("").chain(nil, runeTokens(prompt), 16, 100, "")
	text := prefix.Hashes(nil, "llama", []byte(prompt), 0)
	f.idx.Apply(
		f.b.Meta().Address,
		&kvevents.Batch{Events: []kvevents.Event{{Kind: kvevents.KindStored, Hashes: []uint64{7}}}},
	)
	f.route(t, prompt, f.b)
	if got := f.resident.HotPrefixes("llama", 100); len(got) != 0 {
		t.Fatalf("routed but not stored: %d hashes published", len(got))
	}
	f.idx.Apply(f.b.Meta().Address, &kvevents.Batch{Events: []kvevents.Event{{Kind: kvevents.KindStored, Hashes: kv[:8]}}})
	got := f.resident.HotPrefixes("llama", 100)
	// Text block i ends at 64(i+1) bytes, KV block 4(i+1)-1: blocks 0 and 1 are held.
	if !sameSet(got, text[:2]) {
		t.Errorf("published %x, want the first two text blocks %x", got, text[:2])
	}
	if got := f.resident.HotPrefixes("other-model", 100); len(got) != 0 {
		t.Errorf("another model's sketch got %d hashes", len(got))
	}
}

func sameSet(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[uint64]bool{}
	for _, h := range a {
		m[h] = true
	}
	for _, h := range b {
		if !m[h] {
			return false
		}
	}
	return true
}
