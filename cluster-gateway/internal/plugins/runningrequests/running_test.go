package runningrequests_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/runningrequests"
)

func TestScore(t *testing.T) {
	tests := []struct {
		name    string
		running []int
		want    []float64
	}{
		{"fewest wins", []int{8, 4, 0}, []float64{0, 0.5, 1}},
		{"all equal", []int{2, 2, 2}, []float64{1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eps := make([]framework.Endpoint, len(tt.running))
			for i, r := range tt.running {
				eps[i] = plugintest.Endpoint("e", "m", 9, r, 0.5, plugintest.Epoch)
			}
			p, err := runningrequests.Factory("r", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			scores := make([]float64, len(eps))
			p.(framework.Scorer).Score(context.Background(), &framework.CycleState{}, &framework.Request{}, eps, scores)
			for i := range scores {
				if scores[i] != tt.want[i] {
					t.Fatalf("scores = %v, want %v", scores, tt.want)
				}
			}
		})
	}
	if _, err := runningrequests.Factory("r", json.RawMessage(`{"x":1}`), nil); err == nil {
		t.Fatal("unknown parameter accepted")
	}
}
