package modelfilter_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/modelfilter"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

func ep(addr, base string, adapters []string, active []string, maxLoRA int) *plugintest.FakeEndpoint {
	e := plugintest.NewEndpoint(addr)
	if base != "" {
		e.SetModels(&framework.Models{Base: base, Adapters: adapters})
	}
	e.SetMetrics(&framework.Metrics{ActiveAdapters: active, MaxLoRA: maxLoRA})
	return e
}

func TestFilter(t *testing.T) {
	fleet := func() []framework.Endpoint {
		return []framework.Endpoint{
			ep("a", "llama", []string{"sql"}, nil, 4),
			ep("b", "llama", nil, []string{"chat"}, 4),
			ep("c", "llama", nil, nil, 0),
			ep("d", "qwen", nil, nil, 4),
			ep("e", "", nil, nil, 0), // models not known yet
			ep("f", "mistral", nil, nil, 0),
		}
	}
	tests := []struct {
		name         string
		req          framework.Request
		loadOnDemand bool
		want         string
	}{
		{"base model", framework.Request{Model: "llama", BaseModel: "llama"}, true, "a b c"},
		{"other base", framework.Request{Model: "qwen", BaseModel: "qwen"}, true, "d"},
		{"adapter listed", framework.Request{Model: "sql", BaseModel: "llama", Adapter: "sql"}, true, "a"},
		{"adapter resident per metrics", framework.Request{Model: "chat", BaseModel: "llama", Adapter: "chat"}, true, "b"},
		{"adapter loadable on demand", framework.Request{Model: "new", BaseModel: "llama", Adapter: "new"}, true, "a b"},
		{"on demand disabled", framework.Request{Model: "new", BaseModel: "llama", Adapter: "new"}, false, ""},
		{"unknown model", framework.Request{Model: "gpt", BaseModel: "gpt"}, true, ""},
		{"no model keeps all", framework.Request{}, true, "a b c d e f"},
		{"on demand without reported slots", framework.Request{Model: "x", BaseModel: "mistral", Adapter: "x"}, true, "f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := modelfilter.New("m", tt.loadOnDemand)
			got := f.Filter(context.Background(), &framework.CycleState{}, &tt.req, fleet())
			var addrs []string
			for _, e := range got {
				addrs = append(addrs, e.Meta().Address)
			}
			if s := strings.Join(addrs, " "); s != tt.want {
				t.Fatalf("kept %q, want %q", s, tt.want)
			}
		})
	}
}

func TestFactory(t *testing.T) {
	if _, err := modelfilter.Factory("m", json.RawMessage(`{"loadOnDemand": false}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := modelfilter.Factory("m", json.RawMessage(`{"lazy": true}`), nil); err == nil {
		t.Fatal("unknown parameter accepted")
	}
}
