package kvcachescorer_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/kvcachescorer"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

func TestScore(t *testing.T) {
	tests := []struct {
		kv   float64
		want float64
	}{
		{0, 1}, {0.25, 0.75}, {1, 0}, {1.3, 0}, {-0.1, 1},
	}
	p, err := kvcachescorer.Factory("kv", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		eps := []framework.Endpoint{plugintest.Endpoint("e", "m", 0, 0, tt.kv, plugintest.Epoch), plugintest.NewEndpoint("x")}
		scores := make([]float64, 2)
		p.(framework.Scorer).Score(context.Background(), &framework.CycleState{}, &framework.Request{}, eps, scores)
		if scores[0] != tt.want || scores[1] != 0 {
			t.Errorf("kv %v: scores %v, want [%v 0]", tt.kv, scores, tt.want)
		}
	}
	if _, err := kvcachescorer.Factory("kv", json.RawMessage(`{"x":1}`), nil); err == nil {
		t.Fatal("unknown parameter accepted")
	}
}
