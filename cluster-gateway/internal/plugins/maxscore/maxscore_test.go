package maxscore_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/maxscore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

func TestPick(t *testing.T) {
	eps := []framework.Endpoint{
		plugintest.NewEndpoint("a"), plugintest.NewEndpoint("b"),
		plugintest.NewEndpoint("c"), plugintest.NewEndpoint("d"),
	}
	tests := []struct {
		params string
		want   []string
	}{
		{"", []string{"c", "a", "d"}},
		{`{"maxNumOfEndpoints": 1}`, []string{"c"}},
		{`{"maxNumOfEndpoints": 10}`, []string{"c", "a", "d", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.params, func(t *testing.T) {
			p, err := maxscore.Factory("m", json.RawMessage(tt.params), nil)
			if err != nil {
				t.Fatal(err)
			}
			res := p.(framework.Picker).Pick(
				context.Background(),
				&framework.CycleState{},
				&framework.Request{},
				plugintest.Scored(eps, 2.5, 0.1, 3, 1),
			)
			if len(res.Targets) != len(tt.want) {
				t.Fatalf("targets = %v, want %v", res.Targets, tt.want)
			}
			for i, e := range res.Targets {
				if e.Meta().Address != tt.want[i] {
					t.Fatalf("target %d = %s, want %s", i, e.Meta().Address, tt.want[i])
				}
			}
		})
	}
	if _, err := maxscore.Factory("m", json.RawMessage(`{"max": 1}`), nil); err == nil {
		t.Fatal("unknown parameter accepted")
	}
}
