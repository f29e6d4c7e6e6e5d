package weightedrandom_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/weightedrandom"
)

func pickCounts(t *testing.T, scores ...float64) map[string]int {
	t.Helper()
	eps := []framework.Endpoint{plugintest.NewEndpoint("a"), plugintest.NewEndpoint("b"), plugintest.NewEndpoint("c")}
	p, err := weightedrandom.Factory("w", json.RawMessage(`{"maxNumOfEndpoints": 1}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for range 6000 {
		res := p.(framework.Picker).Pick(
			context.Background(),
			&framework.CycleState{},
			&framework.Request{},
			plugintest.Scored(eps, scores...),
		)
		counts[res.Targets[0].Meta().Address]++
	}
	return counts
}

func TestPickProportionalToScore(t *testing.T) {
	tests := []struct {
		name   string
		scores []float64
		want   map[string]int // expected picks of 6000
	}{
		{"proportional", []float64{3, 2, 1}, map[string]int{"a": 3000, "b": 2000, "c": 1000}},
		{"zero never first", []float64{1, 1, 0}, map[string]int{"a": 3000, "b": 3000, "c": 0}},
		{"all zero is uniform", []float64{0, 0, 0}, map[string]int{"a": 2000, "b": 2000, "c": 2000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pickCounts(t, tt.scores...)
			for a, want := range tt.want {
				if d := got[a] - want; d > 250 || d < -250 {
					t.Fatalf("picks %v, want about %v", got, tt.want)
				}
			}
		})
	}
}
