package slofilter_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/slofilter"
)

// fakeModel predicts fixed latencies per endpoint address.
type fakeModel map[string][2]time.Duration

func (m fakeModel) PredictLatency(e framework.Endpoint, _, _ int) (ttft, tpot time.Duration) {
	p := m[e.Meta().Address]
	return p[0], p[1]
}

const ms = time.Millisecond

func TestFilter(t *testing.T) {
	// a: fast first token, slow decode; b: slow first token, fast decode; c: both middling.
	model := fakeModel{"a": {100 * ms, 60 * ms}, "b": {900 * ms, 10 * ms}, "c": {400 * ms, 30 * ms}}
	now := time.Unix(1000, 0)
	tests := []struct {
		name     string
		slo      framework.SLO
		priority int
		waited   time.Duration // since the request arrived
		headroom float64
		want     string // kept addresses, in order
		refused  bool
	}{
		{name: "no objectives: untouched", want: "a,b,c"},
		{name: "ttft only: meet", slo: framework.SLO{TTFT: 500 * ms}, want: "a,c"},
		{name: "tpot only: meet", slo: framework.SLO{TPOT: 40 * ms}, want: "b,c"},
		{name: "both: only c meets both", slo: framework.SLO{TTFT: 500 * ms, TPOT: 40 * ms}, want: "c"},
		{name: "exactly at the objective meets", slo: framework.SLO{TTFT: 400 * ms, TPOT: 30 * ms}, want: "c"},
		{name: "time already waited counts against ttft", slo: framework.SLO{TTFT: 500 * ms}, waited: 200 * ms, want: "a"},
		{name: "headroom reserves a share", slo: framework.SLO{TTFT: 500 * ms}, headroom: 0.25, want: "a"},
		{name: "none meets, critical: the nearest", slo: framework.SLO{TTFT: 50 * ms, TPOT: 5 * ms}, want: "c"},
		{name: "none meets, default priority: the nearest", slo: framework.SLO{TTFT: 90 * ms}, want: "a"},
		{name: "none meets, sheddable: refused", slo: framework.SLO{TTFT: 50 * ms}, priority: -1, refused: true},
		{name: "some meet, sheddable: served", slo: framework.SLO{TTFT: 500 * ms}, priority: -1, want: "a,c"},
		{
			name:     "past the ttft objective, critical: the soonest",
			slo:      framework.SLO{TTFT: 500 * ms},
			waited:   600 * ms,
			priority: 5,
			want:     "a",
		},
		{
			name:     "past the ttft objective, sheddable: refused",
			slo:      framework.SLO{TTFT: 500 * ms},
			waited:   time.Second,
			priority: -3,
			refused:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := slofilter.New("slo", tt.headroom, model, nil)
			eps := plugintest.Endpoints(plugintest.NewEndpoint("a"), plugintest.NewEndpoint("b"), plugintest.NewEndpoint("c"))
			req := &framework.Request{ID: "r", SLO: tt.slo, Priority: tt.priority, Arrived: now.Add(-tt.waited)}
			got := f.Filter(context.Background(), &framework.CycleState{Now: now}, req, eps)
			if s := addrs(got); s != tt.want {
				t.Fatalf("kept %q, want %q", s, tt.want)
			}
			// The scheduler asks for the refusal only when the filter kept nothing.
			if err := f.Refusal(req); tt.refused != (len(got) == 0 && errors.Is(err, framework.ErrSLOUnattainable)) {
				t.Fatalf("kept %d, refusal %v; want refused %v", len(got), err, tt.refused)
			}
		})
	}
}

func addrs(eps []framework.Endpoint) string {
	s := ""
	for i, e := range eps {
		if i > 0 {
			s += ","
		}
		s += e.Meta().Address
	}
	return s
}

type plainScorer struct{}

func (plainScorer) TypedName() framework.TypedName { return framework.TypedName{Type: "x", Name: "x"} }
func (plainScorer) Score(context.Context, *framework.CycleState, *framework.Request, []framework.Endpoint, []float64) {
}

type modelScorer struct {
	plainScorer
	fakeModel
}

func TestBind(t *testing.T) {
	f := slofilter.New("slo", 0, nil, nil)
	if err := f.Bind(&framework.Profile{Scorers: []framework.WeightedScorer{{Scorer: plainScorer{}}}}); err == nil {
		t.Fatal("bound without a latency model")
	}
	m := modelScorer{fakeModel: fakeModel{"a": {time.Second, 0}, "b": {10 * ms, 0}}}
	if err := f.Bind(
		&framework.Profile{Scorers: []framework.WeightedScorer{{Scorer: plainScorer{}}, {Scorer: m}}},
	); err != nil {
		t.Fatal(err)
	}
	eps := plugintest.Endpoints(plugintest.NewEndpoint("a"), plugintest.NewEndpoint("b"))
	got := f.Filter(
		context.Background(),
		&framework.CycleState{},
		&framework.Request{SLO: framework.SLO{TTFT: 100 * ms}},
		eps,
	)
	if addrs(got) != "b" {
		t.Fatalf("kept %q with the bound model, want b", addrs(got))
	}
}

func TestFactory(t *testing.T) {
	for _, tt := range []struct {
		params string
		ok     bool
	}{
		{``, true}, {`{}`, true}, {`{"headroom":0.1}`, true},
		{`{"headroom":1}`, false}, {`{"headroom":-0.1}`, false}, {`{"margin":0.1}`, false},
	} {
		_, err := slofilter.Factory("slo", json.RawMessage(tt.params), plugintest.NewHandle())
		if (err == nil) != tt.ok {
			t.Errorf("Factory(%s): %v, want ok %v", tt.params, err, tt.ok)
		}
	}
}

func BenchmarkFilter(b *testing.B) {
	model := fakeModel{}
	var all []*plugintest.FakeEndpoint
	for i := range 64 {
		addr := string(rune('A' + i))
		model[addr] = [2]time.Duration{time.Duration(i) * 10 * ms, time.Duration(i) * ms}
		all = append(all, plugintest.NewEndpoint(addr))
	}
	f := slofilter.New("slo", 0, model, nil)
	src := plugintest.Endpoints(all...)
	eps := make([]framework.Endpoint, len(src))
	req := &framework.Request{SLO: framework.SLO{TTFT: 300 * ms, TPOT: 40 * ms}}
	cs := &framework.CycleState{}
	b.ReportAllocs()
	for b.Loop() {
		copy(eps, src)
		f.Filter(context.Background(), cs, req, eps)
	}
}
