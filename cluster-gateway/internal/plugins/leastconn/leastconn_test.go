package leastconn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/leastconn"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

func newPicker(t testing.TB, params string, h framework.Handle) *leastconn.Picker {
	t.Helper()
	p, err := leastconn.Factory("lc", json.RawMessage(params), h)
	if err != nil {
		t.Fatal(err)
	}
	return p.(*leastconn.Picker)
}

func pick(p framework.Picker, eps []framework.Endpoint) *framework.Result {
	scores := make([]float64, len(eps))
	if len(scores) > 0 {
		scores[len(scores)-1] = 9 // ignored
	}
	return p.Pick(context.Background(), &framework.CycleState{}, &framework.Request{}, plugintest.Scored(eps, scores...))
}

// TestOrder pins the order: (in_flight + 1) / weight, idle pods 0, ties in the order their load
// last changed (here: candidate order, nothing has changed yet).
func TestOrder(t *testing.T) {
	tests := []struct {
		name     string
		weights  []float64
		inFlight []int64
		want     string
	}{
		{"fewest in flight", []float64{1, 1, 1}, []int64{3, 0, 1}, "bca"},
		{"connections over weight", []float64{4, 1, 1}, []int64{3, 1, 0}, "cab"}, // a 4/4, b 2/1, c idle
		{"heavier wins at equal load", []float64{1, 2}, []int64{1, 1}, "ba"},     // a 2/1, b 2/2
		{"idle pods rank equal whatever their weight", []float64{1, 10}, []int64{0, 0}, "ab"},
		{"an idle light pod before a busy heavy one", []float64{100, 1}, []int64{1, 0}, "ba"},
		{"equal load, equal weight: candidate order", []float64{2, 2, 2}, []int64{2, 2, 2}, "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eps := plugintest.WeightedEndpoints(tt.weights...)
			for i, n := range tt.inFlight {
				eps[i].AddInFlight(n)
			}
			if got := plugintest.Targets(pick(newPicker(t, "", nil), plugintest.Endpoints(eps...))); got != tt.want {
				t.Fatalf("targets %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRoundRobinAmongEquals checks HAProxy's rotation within a group of equal load: a pod
// picked goes behind its equals.
func TestRoundRobinAmongEquals(t *testing.T) {
	p := newPicker(t, `{"maxNumOfEndpoints": 1}`, nil)
	eps := plugintest.Endpoints(plugintest.WeightedEndpoints(1, 1, 1)...)
	var got strings.Builder
	for range 7 {
		got.WriteString(plugintest.Targets(pick(p, eps))) // nothing is sent: all stay idle
	}
	if got.String() != "abcabca" {
		t.Fatalf("rotation %q, want abcabca", got.String())
	}
}

// TestBurstByWeight fills two pods of weights 2 and 1 with requests that do not finish: the
// heavier takes two for every one of the lighter, alternating on equal keys.
func TestBurstByWeight(t *testing.T) {
	p := newPicker(t, "", nil)
	eps := plugintest.Endpoints(plugintest.WeightedEndpoints(2, 1)...)
	var got strings.Builder
	for range 8 {
		res := pick(p, eps)
		res.Targets[0].(*plugintest.FakeEndpoint).AddInFlight(1)
		got.WriteString(res.Targets[0].Meta().Address)
	}
	// a (both idle), b (a 2/2 = 1), a (b 2/1), a (1.5 < 2), b (2 = 2, b changed longer ago), ...
	if got.String() != "abaabaab" {
		t.Fatalf("burst %q, want abaabaab", got.String())
	}
}

// TestResponseEndMovesPodBack checks that a finished response counts as a change of load, as a
// released connection repositions an HAProxy server behind its equals.
func TestResponseEndMovesPodBack(t *testing.T) {
	for _, answered := range []bool{false, true} {
		t.Run(fmt.Sprintf("answered=%v", answered), func(t *testing.T) {
			p := newPicker(t, `{"maxNumOfEndpoints": 1}`, nil)
			eps := plugintest.Endpoints(plugintest.WeightedEndpoints(1, 1)...)
			pick(p, eps) // a, then b: a's load changed before b's
			pick(p, eps)
			if answered {
				p.PostResponse(context.Background(), &framework.Request{}, &framework.ResponseInfo{Endpoint: eps[0], Status: 200})
			}
			want := map[bool]string{false: "a", true: "b"}[answered]
			if got := plugintest.Targets(pick(p, eps)); got != want {
				t.Fatalf("next %q, want %q", got, want)
			}
		})
	}
}

func TestRemovedEndpointsDropState(t *testing.T) {
	all := plugintest.WeightedEndpoints(1, 1)
	h := plugintest.NewHandle(plugintest.Endpoints(all...)...)
	p := newPicker(t, "", h)
	pick(p, plugintest.Endpoints(all...))
	if n := leastconn.Held(p); n != 2 {
		t.Fatalf("state for %d endpoints, want 2", n)
	}
	h.Remove("b")
	p.PostResponse(context.Background(), &framework.Request{}, &framework.ResponseInfo{Endpoint: all[1]}) // late answer
	p.PostResponse(context.Background(), &framework.Request{}, nil)
	if n := leastconn.Held(p); n != 1 {
		t.Fatalf("state for %d endpoints after b left, want 1", n)
	}
	if res := pick(p, nil); len(res.Targets) != 0 {
		t.Fatal("targets from no candidates")
	}
}

func TestFactoryRejectsBadParameters(t *testing.T) {
	for _, params := range []string{`{"defaultWeight": -1}`, `{"choiceCount": 2}`, `{"weightsByLabel": {"label": "", ` +
		`"weights": {"a": 1}}}`} {
		if _, err := leastconn.Factory("lc", json.RawMessage(params), nil); err == nil {
			t.Errorf("%s accepted", params)
		}
	}
}

func BenchmarkPick(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("endpoints=%d", n), func(b *testing.B) {
			var eps []framework.Endpoint
			for i := range n {
				e := plugintest.NewLabeledEndpoint(fmt.Sprintf("10.0.%d.%d:8000", i/256, i%256),
					map[string]string{framework.DefaultWeightLabel: fmt.Sprint(1 + i%4)})
				e.AddInFlight(int64(i % 7))
				eps = append(eps, e)
			}
			p := newPicker(b, "", nil)
			scored := plugintest.Scored(eps, make([]float64, n)...)
			b.ReportAllocs()
			for b.Loop() {
				p.Pick(context.Background(), &framework.CycleState{}, &framework.Request{}, scored)
			}
		})
	}
}
