package framework_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

func TestWeight(t *testing.T) {
	gpus := &framework.LabelWeights{Label: "switchyard.dev/gpu", Weights: map[string]float64{"h100": 15.75, "a10g": 1.23}}
	tests := []struct {
		name    string
		params  framework.WeightParams
		labels  map[string]string
		want    float64
		wantBad bool
	}{
		{"no labels: default 1", framework.WeightParams{}, nil, 1, false},
		{"weight label", framework.WeightParams{}, map[string]string{framework.DefaultWeightLabel: "15.75"}, 15.75, false},
		{
			"weight label with spaces",
			framework.WeightParams{},
			map[string]string{framework.DefaultWeightLabel: " 2 "},
			2,
			false,
		},
		{
			"own label name",
			framework.WeightParams{WeightLabel: "w"},
			map[string]string{"w": "3", framework.DefaultWeightLabel: "9"},
			3,
			false,
		},
		{"configured default", framework.WeightParams{DefaultWeight: 4}, map[string]string{"other": "x"}, 4, false},
		{
			"table by gpu",
			framework.WeightParams{WeightsByLabel: gpus},
			map[string]string{"switchyard.dev/gpu": "a10g"},
			1.23,
			false,
		},
		{"weight label wins over table", framework.WeightParams{WeightsByLabel: gpus},
			map[string]string{"switchyard.dev/gpu": "a10g", framework.DefaultWeightLabel: "7"}, 7, false},
		{
			"value not in table",
			framework.WeightParams{WeightsByLabel: gpus},
			map[string]string{"switchyard.dev/gpu": "l4"},
			1,
			false,
		},
		{"not a number falls back to table", framework.WeightParams{WeightsByLabel: gpus},
			map[string]string{"switchyard.dev/gpu": "h100", framework.DefaultWeightLabel: "fast"}, 15.75, true},
		{"zero", framework.WeightParams{}, map[string]string{framework.DefaultWeightLabel: "0"}, 1, true},
		{"under the minimum", framework.WeightParams{}, map[string]string{framework.DefaultWeightLabel: "1e-9"}, 1, true},
		{"small but valid", framework.WeightParams{}, map[string]string{framework.DefaultWeightLabel: "0.05"}, 0.05, false},
		{"negative", framework.WeightParams{}, map[string]string{framework.DefaultWeightLabel: "-3"}, 1, true},
		{"NaN", framework.WeightParams{}, map[string]string{framework.DefaultWeightLabel: "NaN"}, 1, true},
		{"infinite", framework.WeightParams{}, map[string]string{framework.DefaultWeightLabel: "+Inf"}, 1, true},
		{"over the maximum", framework.WeightParams{}, map[string]string{framework.DefaultWeightLabel: "1e300"}, 1, true},
		{"empty", framework.WeightParams{}, map[string]string{framework.DefaultWeightLabel: ""}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.params.Normalize()
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Weight(&framework.EndpointMeta{Address: "10.0.0.1:8000", Labels: tt.labels})
			if got != tt.want || (err != nil) != tt.wantBad {
				t.Fatalf("Weight = %v, %v; want %v, bad %v", got, err, tt.want, tt.wantBad)
			}
			if err != nil && (!errors.Is(err, framework.ErrBadWeight) || !strings.Contains(err.Error(), "10.0.0.1:8000")) {
				t.Fatalf("error %q does not wrap ErrBadWeight or name the endpoint", err)
			}
		})
	}
}

func TestWeightParamsInvalid(t *testing.T) {
	tests := []struct {
		name, params, wantErr string
	}{
		{"negative default", `{"defaultWeight": -1}`, "defaultWeight"},
		{"default over the maximum", `{"defaultWeight": 2e6}`, "defaultWeight"},
		{"table without label", `{"weightsByLabel": {"weights": {"h100": 2}}}`, "weightsByLabel.label"},
		{"table without weights", `{"weightsByLabel": {"label": "gpu"}}`, "weightsByLabel.weights"},
		{"zero in table", `{"weightsByLabel": {"label": "gpu", "weights": {"h100": 0}}}`, `weightsByLabel.weights["h100"]`},
		{"unknown field", `{"weight": 2}`, "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p framework.WeightedPickerParams
			err := framework.DecodeParams(json.RawMessage(tt.params), &p)
			if err == nil {
				_, err = p.Normalize()
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestWeightedPickerParamsDefaults(t *testing.T) {
	var p framework.WeightedPickerParams
	if err := framework.DecodeParams(json.RawMessage(`{"maxNumOfEndpoints": 2, "weightLabel": "w"}`), &p); err != nil {
		t.Fatal(err)
	}
	p, err := p.Normalize()
	if err != nil || p.MaxNumOfEndpoints != 2 || p.WeightLabel != "w" || p.DefaultWeight != 1 {
		t.Fatalf("params %+v, %v", p, err)
	}
	p, _ = framework.WeightedPickerParams{}.Normalize()
	if p.MaxNumOfEndpoints != framework.DefaultMaxNumOfEndpoints || p.WeightLabel != framework.DefaultWeightLabel {
		t.Fatalf("defaults %+v", p)
	}
}

func TestWeightedStatesLogsBadLabelOnce(t *testing.T) {
	var logs bytes.Buffer
	p, _ := framework.WeightParams{}.Normalize()
	ws := framework.NewWeightedStates[int](p, slog.New(slog.NewTextHandler(&logs, nil)))
	bad := plugintest.NewLabeledEndpoint("a", map[string]string{framework.DefaultWeightLabel: "lots"})
	good := plugintest.NewLabeledEndpoint("b", map[string]string{framework.DefaultWeightLabel: "2.5"})
	for range 3 {
		if w := ws.Get(bad).Weight; w != 1 {
			t.Fatalf("bad label weight %v, want the default 1", w)
		}
		if w := ws.Get(good).Weight; w != 2.5 {
			t.Fatalf("weight %v, want 2.5", w)
		}
	}
	ws.Get(bad).State = 7
	if ws.Get(bad).State != 7 {
		t.Fatal("state not kept")
	}
	if n := strings.Count(
		logs.String(),
		"endpoint weight label ignored",
	); n != 1 ||
		!strings.Contains(logs.String(), `lots`) {
		t.Fatalf("logged %d times (want once, with the value): %s", n, logs.String())
	}
	ws.Retain([]framework.Endpoint{good})
	if ws.Len() != 1 {
		t.Fatalf("%d entries after Retain, want 1", ws.Len())
	}
}
