package publish_test

import (
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/predictedttft"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/publish"
	"github.com/switchyard-dev/switchyard/gossip/sketch"
)

func lora(m datastore.Metrics, active, waiting []string) datastore.Metrics {
	m.ActiveAdapters, m.WaitingAdapters = active, waiting
	return m
}

// The fallback prediction (no TTFTPredictor) on an idle pod with the default priors is
// 5 ms overhead + one 20 ms step + 1,000 tokens at 10,000 tokens/s = 125 ms; each waiting
// request adds 100 ms; the running batch adds nothing (no batch slope is assumed before one is
// measured). The mean is over the pods the best is taken from: a pod with 1 waiting and 2 running
// predicts 225 ms, so beside an idle one the mean is 175 ms; two saturated pods with 6 and no request waiting, 725 and
// 125 ms.
func TestBuild(t *testing.T) {
	tests := []struct {
		name string
		pods []podSpec
		want []figures
	}{
		{
			name: "ready pods summed",
			pods: []podSpec{{base: "m", m: kv(1, 2, 0.5)}, {base: "m", m: kv(0, 0, 0.25)}},
			want: []figures{
				{
					Name:       "m",
					Ready:      2,
					TotalKV:    3200,
					FreeKV:     2000,
					Queue:      1,
					Running:    2,
					TTFTms:     125,
					MeanTTFTms: 175,
					PrefillTPS: 20000,
					DecodeTPS:  100,
				},
			},
		},
		{
			name: "stale, failing and ejected pods are not ready",
			pods: []podSpec{
				{base: "m", m: kv(0, 0, 0)},
				{base: "m", m: kv(7, 3, 0.5), age: 3 * time.Second},
				{base: "m", m: kv(7, 3, 0.5), failing: true},
				{base: "m", m: kv(7, 3, 0.5), ejected: true},
			},
			want: []figures{
				{Name: "m", Ready: 1, TotalKV: 1600, FreeKV: 1600, TTFTms: 125, MeanTTFTms: 125, PrefillTPS: 10000, DecodeTPS: 50},
			},
		},
		{
			name: "saturation by queue and KV; TTFT from the best unsaturated pod",
			pods: []podSpec{{base: "m", m: kv(5, 0, 0.1)}, {base: "m", m: kv(0, 0, 0.85)}, {base: "m", m: kv(1, 0, 0.5)}},
			want: []figures{
				{
					Name:       "m",
					Ready:      3,
					TotalKV:    4800,
					FreeKV:     2480,
					Queue:      6,
					Saturation: 0.67,
					TTFTms:     225,
					MeanTTFTms: 225,
					PrefillTPS: 30000,
					DecodeTPS:  150,
				},
			},
		},
		{
			name: "every pod saturated",
			pods: []podSpec{{base: "m", m: kv(6, 0, 0.2)}, {base: "m", m: kv(0, 0, 0.9)}},
			want: []figures{
				{
					Name:       "m",
					Ready:      2,
					TotalKV:    3200,
					FreeKV:     1440,
					Queue:      6,
					Saturation: 1,
					Saturated:  true,
					TTFTms:     125,
					MeanTTFTms: 425,
					PrefillTPS: 20000,
					DecodeTPS:  100,
				},
			},
		},
		{
			name: "model without a ready pod",
			pods: []podSpec{{base: "m", m: kv(0, 0, 0), age: 5 * time.Second}},
			want: []figures{{Name: "m", Saturation: 1, Saturated: true}},
		},
		{
			name: "models sorted, adapters counted, pods without models skipped",
			pods: []podSpec{
				{base: "b", adapters: []string{"x"}, m: lora(kv(0, 0, 0), []string{"x", "y"}, []string{"z"})},
				{base: "b", adapters: []string{"x"}, m: kv(0, 0, 0)},
				{base: "a", m: kv(0, 0, 0)},
				{m: kv(9, 9, 0.9)},
			},
			want: []figures{
				{Name: "a", Ready: 1, TotalKV: 1600, FreeKV: 1600, TTFTms: 125, MeanTTFTms: 125, PrefillTPS: 10000, DecodeTPS: 50},
				{Name: "b", Ready: 2, TotalKV: 3200, FreeKV: 3200, TTFTms: 125, MeanTTFTms: 125, PrefillTPS: 20000, DecodeTPS: 100,
					Adapters: "x:r2/q0/x1 y:r1/q0/x1 z:r0/q1/x0 "},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			p, err := publish.New(
				publish.DefaultConfig(),
				newView(t, clk.Now(), tt.pods...).View(),
				&recordingSink{},
				publish.Options{Now: clk.Now},
			)
			if err != nil {
				t.Fatal(err)
			}
			got := p.Build().GetModels()
			if len(got) != len(tt.want) {
				t.Fatalf("got %d models, want %d: %v", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				if g := figuresOf(got[i]); g != w {
					t.Errorf("model %d:\n got %+v\nwant %+v", i, g, w)
				}
			}
		})
	}
}

type fakePredictor map[string]time.Duration

func (f fakePredictor) Predict(e framework.Endpoint, prompt, cached int) time.Duration {
	if prompt != publish.ReferencePromptTokens || cached != 0 {
		return time.Hour
	}
	return f[e.Meta().Address]
}

type fakeSpeeds map[string][2]float64

func (f fakeSpeeds) Speed(e framework.Endpoint) (float64, float64, bool) {
	s, ok := f[e.Meta().Address]
	return s[0], s[1], ok
}

type fakeQueue map[string]int

func (f fakeQueue) Queued(model string) int { return f[model] }

type fakePrefixes map[string][]uint64

func (f fakePrefixes) HotPrefixes(model string, max int) []uint64 {
	h := f[model]
	return h[:min(len(h), max)]
}

func TestBuildWithSources(t *testing.T) {
	clk := newClock()
	view := newView(t, clk.Now(),
		podSpec{base: "m", adapters: []string{"x"}, m: kv(5, 0, 0.1)}, // saturated: its TTFT is not the best
		podSpec{base: "m", m: kv(0, 0, 0.1)},
		podSpec{base: "m", m: kv(0, 0, 0.1)},
		podSpec{base: "n", m: kv(0, 0, 0.1)},
	)
	hot := make([]uint64, 300)
	for i := range hot {
		hot[i] = uint64(i)*0x9e3779b97f4a7c15 + 1
	}
	opts := publish.Options{
		Now: clk.Now,
		Predictor: fakePredictor{
			addr(0): 10 * time.Millisecond,
			addr(1): 80 * time.Millisecond,
			addr(2): 60 * time.Millisecond,
			addr(3): time.Second,
		},
		Speeds:   fakeSpeeds{addr(0): {2000, 40}, addr(1): {3000, 60}},
		Queue:    fakeQueue{"m": 4, "x": 3},
		Prefixes: fakePrefixes{"m": hot},
	}
	cfg := publish.DefaultConfig()
	cfg.MaxHotPrefixes = 200
	p, err := publish.New(cfg, view.View(), &recordingSink{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	models := p.Build().GetModels()
	want := figures{
		Name:       "m",
		Ready:      3,
		TotalKV:    4800,
		FreeKV:     4320,
		Queue:      9,
		Saturation: 0.33,
		TTFTms:     60,
		MeanTTFTms: 70,
		PrefillTPS: 2000 + 3000 + 10000,
		DecodeTPS:  40 + 60 + 50,
		Adapters:   "x:r1/q3/x0 ",
	}
	if g := figuresOf(models[0]); g != want {
		t.Fatalf("got  %+v\nwant %+v", g, want)
	}
	if models[1].GetPrefixSketch() != nil {
		t.Errorf("model n has a sketch, but no hot prefixes")
	}
	b, err := sketch.FromProto(models[0].GetPrefixSketch())
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() != 200 || b.LongestPrefix(hot[:200]) != 200 {
		t.Fatalf("sketch holds %d items and %d of the 200 hottest prefixes, want 200", b.Len(), b.LongestPrefix(hot[:200]))
	}
	if fp := b.LongestPrefix(hot[200:]); fp > 5 {
		t.Errorf("sketch matches %d leading hashes that were not added", fp)
	}
}

// Before it has measured anything, the predicted-ttft-scorer predicts what the fallback does.
func TestFallbackAgreesWithUnmeasuredScorer(t *testing.T) {
	clk := newClock()
	view := newView(t, clk.Now(), podSpec{base: "m", m: kv(2, 3, 0.1)}, podSpec{base: "m", m: kv(3, 1, 0.1)})
	scorer := predictedttft.New("ttft", predictedttft.DefaultConfig(), clk.Now)
	var got [2]figures
	for i, opts := range []publish.Options{{Now: clk.Now}, {Now: clk.Now, Predictor: scorer}} {
		p, err := publish.New(publish.DefaultConfig(), view.View(), &recordingSink{}, opts)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = figuresOf(p.Build().GetModels()[0])
	}
	if got[0] != got[1] || got[0].TTFTms < 300 {
		t.Fatalf("fallback %+v\nscorer   %+v\nwant equal, above 300 ms with two requests waiting", got[0], got[1])
	}
}
