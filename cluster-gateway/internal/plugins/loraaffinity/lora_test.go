package loraaffinity_test

import (
	"context"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/loraaffinity"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

func ep(active, waiting []string, maxLoRA int) *plugintest.FakeEndpoint {
	e := plugintest.NewEndpoint("e")
	e.SetMetrics(&framework.Metrics{ActiveAdapters: active, WaitingAdapters: waiting, MaxLoRA: maxLoRA})
	return e
}

func TestScore(t *testing.T) {
	tests := []struct {
		name    string
		adapter string
		ep      *plugintest.FakeEndpoint
		want    float64
	}{
		{"base model is neutral", "", ep(nil, nil, 0), 1},
		{"active", "a", ep([]string{"a", "b"}, nil, 2), loraaffinity.ScoreActive},
		{"free slot", "a", ep([]string{"b"}, nil, 2), loraaffinity.ScoreFreeSlot},
		{"waiting, no slot", "a", ep([]string{"b"}, []string{"a"}, 2), loraaffinity.ScoreWaiting},
		{"absent, no slot", "a", ep([]string{"b", "c"}, nil, 2), 0},
		{"no metrics", "a", plugintest.NewEndpoint("e"), 0},
	}
	p, err := loraaffinity.Factory("l", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scores := make([]float64, 1)
			p.(framework.Scorer).Score(
				context.Background(),
				&framework.CycleState{},
				&framework.Request{Adapter: tt.adapter},
				[]framework.Endpoint{tt.ep},
				scores,
			)
			if scores[0] != tt.want {
				t.Fatalf("score = %v, want %v", scores[0], tt.want)
			}
		})
	}
}
