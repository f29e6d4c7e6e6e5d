package framework_test

import (
	"fmt"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

func scored(scores ...float64) []framework.ScoredEndpoint {
	out := make([]framework.ScoredEndpoint, len(scores))
	for i, s := range scores {
		out[i] = framework.ScoredEndpoint{Endpoint: plugintest.NewEndpoint(fmt.Sprintf("e%d", i)), Score: s}
	}
	return out
}

func names(r *framework.Result) string {
	s := ""
	for _, e := range r.Targets {
		s += e.Meta().Address + " "
	}
	return s
}

func TestSelectTop(t *testing.T) {
	tests := []struct {
		scores []float64
		k      int
		want   string
	}{
		{[]float64{0.1, 0.9, 0.5, 0.7}, 3, "e1 e3 e2 "},
		{[]float64{0.1, 0.9}, 5, "e1 e0 "},
		{[]float64{0.3}, 1, "e0 "},
		{nil, 3, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.scores), func(t *testing.T) {
			if got := names(framework.SelectTop(scored(tt.scores...), tt.k)); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSelectTopBreaksTiesAtRandom(t *testing.T) {
	counts := map[string]int{}
	for range 3000 {
		r := framework.SelectTop(scored(0.5, 0.9, 0.9, 0.9), 1)
		counts[r.Targets[0].Meta().Address]++
	}
	if counts["e0"] != 0 {
		t.Fatalf("lower score picked: %v", counts)
	}
	for _, a := range []string{"e1", "e2", "e3"} {
		if counts[a] < 800 || counts[a] > 1200 {
			t.Fatalf("ties not uniform: %v", counts)
		}
	}
}

func TestParsePickerParams(t *testing.T) {
	tests := []struct {
		raw  string
		want int
		err  bool
	}{
		{"", framework.DefaultMaxNumOfEndpoints, false},
		{`{"maxNumOfEndpoints": 1}`, 1, false},
		{`{"maxNumOfEndpoints": 0}`, framework.DefaultMaxNumOfEndpoints, false},
		{`{"maxEndpoints": 1}`, 0, true},
	}
	for _, tt := range tests {
		got, err := framework.ParsePickerParams([]byte(tt.raw))
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%s: got %d, %v", tt.raw, got, err)
		}
	}
}

type releaser struct{ released *int }

func (r releaser) Release() { *r.released++ }

func TestCycleStateReset(t *testing.T) {
	var cs framework.CycleState
	n := 0
	cs.Owner = "owner"
	cs.Write("a", releaser{&n})
	cs.Write("b", 3)
	cs.Reset()
	if _, ok := cs.Read("b"); ok || n != 1 || cs.Owner != "owner" {
		t.Fatalf("after Reset: released %d, owner %v", n, cs.Owner)
	}
}

func TestPendingMapIsBounded(t *testing.T) {
	p := framework.NewPendingMap[int](10)
	reqs := make([]*framework.Request, 100)
	for i := range reqs {
		reqs[i] = &framework.Request{}
		p.Put(reqs[i], i)
	}
	if p.Len() > 20 {
		t.Fatalf("Len = %d, want <= 20", p.Len())
	}
	if v, ok := p.Take(reqs[99]); !ok || v != 99 {
		t.Fatalf("newest entry lost: %v %v", v, ok)
	}
	if _, ok := p.Take(reqs[0]); ok {
		t.Fatal("oldest entry kept")
	}
	if _, ok := p.Take(reqs[99]); ok {
		t.Fatal("Take did not remove")
	}
}

func TestSelectBestKeepsOrderOnTies(t *testing.T) {
	higher := func(a, b *framework.ScoredEndpoint) bool { return a.Score > b.Score }
	tests := []struct {
		name   string
		scores []float64
		k      int
		want   string
	}{
		{"highest first", []float64{1, 3, 2}, 3, "e1 e2 e0 "},
		{"ties in input order", []float64{2, 1, 2, 2}, 4, "e0 e2 e3 e1 "},
		{"k below n", []float64{0, 5, 5, 1}, 2, "e1 e2 "},
		{"k above n", []float64{1}, 3, "e0 "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eps := scored(tt.scores...)
			if got := names(framework.SelectBest(eps, tt.k, higher)); got != tt.want {
				t.Fatalf("SelectBest = %s, want %s", got, tt.want)
			}
			if len(eps) == 4 && tt.k == 2 &&
				names(&framework.Result{Targets: []framework.Endpoint{eps[2].Endpoint, eps[3].Endpoint}}) != "e0 e3 " {
				t.Fatal("the rest lost its order")
			}
		})
	}
}
