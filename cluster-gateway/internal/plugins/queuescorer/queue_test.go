package queuescorer_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/queuescorer"
)

func TestScore(t *testing.T) {
	tests := []struct {
		name   string
		queues []int // -1: no metrics yet
		want   []float64
	}{
		{"spread", []int{0, 5, 10}, []float64{1, 0.5, 0}},
		{"all equal", []int{3, 3}, []float64{1, 1}},
		{"no metrics scores zero", []int{2, -1, 4}, []float64{1, 0, 0}},
		{"single", []int{7}, []float64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eps := make([]framework.Endpoint, len(tt.queues))
			for i, q := range tt.queues {
				eps[i] = plugintest.Endpoint("e", "m", max(q, 0), 0, 0, plugintest.Epoch)
				if q < 0 {
					eps[i] = plugintest.NewEndpoint("e")
				}
			}
			p, err := queuescorer.Factory("q", nil, nil)
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
}

func TestFactoryRejectsParameters(t *testing.T) {
	if _, err := queuescorer.Factory("q", json.RawMessage(`{"x":1}`), nil); err == nil {
		t.Fatal("unknown parameter accepted")
	}
	p, _ := queuescorer.Factory("mine", nil, nil)
	if tn := p.TypedName(); tn.Type != queuescorer.Type || tn.Name != "mine" {
		t.Fatalf("TypedName = %+v", tn)
	}
}
