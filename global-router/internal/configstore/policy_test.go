package configstore_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

func validPolicy() *adminv1.Policy {
	return &adminv1.Policy{
		Model:             "meta-llama/Llama-3.1-8B-Instruct",
		OverflowThreshold: proto.Float64(0.7),
		AllowedRegions:    []string{"eu-west-1", "eu-central-1"},
		OverflowCap:       50,
		TtftSloMs:         800,
		ScorerWeights:     map[string]float64{"rtt": 1.5, "prefill": 0},
	}
}

func TestValidatePolicy(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*adminv1.Policy)
		wantField string // "" = valid
	}{
		{"valid", func(*adminv1.Policy) {}, ""},
		{"only a model", func(p *adminv1.Policy) { *p = adminv1.Policy{Model: "m"} }, ""},
		{"threshold 1", func(p *adminv1.Policy) { p.OverflowThreshold = proto.Float64(1) }, ""},
		{"empty model", func(p *adminv1.Policy) { p.Model = "" }, "model"},
		{"model with space", func(p *adminv1.Policy) { p.Model = "a b" }, "model"},
		{"model too long", func(p *adminv1.Policy) { p.Model = strings.Repeat("m", 257) }, "model"},
		{"threshold 0", func(p *adminv1.Policy) { p.OverflowThreshold = proto.Float64(0) }, "overflow_threshold"},
		{"threshold above 1", func(p *adminv1.Policy) { p.OverflowThreshold = proto.Float64(1.01) }, "overflow_threshold"},
		{"threshold NaN", func(p *adminv1.Policy) { p.OverflowThreshold = proto.Float64(math.NaN()) }, "overflow_threshold"},
		{"empty region", func(p *adminv1.Policy) { p.AllowedRegions = []string{"us-east-1", ""} }, "allowed_regions[1]"},
		{"region with slash", func(p *adminv1.Policy) { p.AllowedRegions = []string{"us/east"} }, "allowed_regions[0]"},
		{"duplicate region", func(p *adminv1.Policy) { p.AllowedRegions = []string{"a", "a"} }, "allowed_regions[1]"},
		{"negative cap", func(p *adminv1.Policy) { p.OverflowCap = -1 }, "overflow_cap"},
		{"negative revision", func(p *adminv1.Policy) { p.Revision = -1 }, "revision"},
		{"unknown weight", func(p *adminv1.Policy) { p.ScorerWeights = map[string]float64{"speed": 1} }, "scorer_weights"},
		{"negative weight", func(p *adminv1.Policy) { p.ScorerWeights = map[string]float64{"rtt": -1} }, "scorer_weights"},
		{
			"infinite weight",
			func(p *adminv1.Policy) { p.ScorerWeights = map[string]float64{"rtt": math.Inf(1)} },
			"scorer_weights",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validPolicy()
			tt.edit(p)
			err := configstore.ValidatePolicy(p)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("ValidatePolicy = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, configstore.ErrInvalid) || !strings.Contains(err.Error(), tt.wantField) {
				t.Fatalf("ValidatePolicy = %v, want ErrInvalid naming %s", err, tt.wantField)
			}
		})
	}
	if err := configstore.ValidatePolicy(nil); !errors.Is(err, configstore.ErrInvalid) {
		t.Fatalf("ValidatePolicy(nil) = %v, want ErrInvalid", err)
	}
}

func TestValidateName(t *testing.T) {
	tests := []struct {
		name  string
		valid bool
	}{
		{"us-east-1", true}, {"c1", true}, {"prod_a.b", true},
		{"", false}, {"a/b", false}, {"a b", false}, {strings.Repeat("x", 254), false}, {"ü", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := configstore.ValidateName("cluster", tt.name)
			if (err == nil) != tt.valid {
				t.Fatalf("ValidateName(%q) = %v, want valid=%v", tt.name, err, tt.valid)
			}
		})
	}
}

func TestEncodeDecodePolicy(t *testing.T) {
	p := validPolicy()
	p.Revision = 99
	b, err := configstore.EncodePolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "revision") || !strings.Contains(string(b), `"overflow_threshold"`) {
		t.Fatalf("stored value %s: want proto field names and no revision", b)
	}
	got, err := configstore.DecodePolicy(p.Model, b, 7)
	if err != nil {
		t.Fatal(err)
	}
	want := proto.CloneOf(p)
	want.Revision = 7
	if !proto.Equal(got, want) {
		t.Fatalf("decoded %v, want %v", got, want)
	}
}

func TestDecodePolicyRejects(t *testing.T) {
	tests := []struct {
		name, model, value string
	}{
		{"not json", "m", "{"},
		{"other model", "m", `{"model":"n"}`},
		{"missing model", "m", `{}`},
		{"invalid threshold", "m", `{"model":"m","overflow_threshold":2}`},
		{"wrong type", "m", `{"model":"m","overflow_cap":"x"}`},
		{"garbage bytes", "m", "\x00\xff\xfe"},
		{"json array", "m", `["eu-west-1"]`},
		{"json null", "m", `null`},
		{"unknown field", "m", `{"model":"m","future_field":1}`},
		{"misspelt residency field", "m", `{"model":"m","allowed_region":["eu-west-1"]}`},
		{"invalid region name", "m", `{"model":"m","allowed_regions":["eu west 1"]}`},
		{"region listed twice", "m", `{"model":"m","allowed_regions":["eu-west-1","eu-west-1"]}`},
		{"regions not a list", "m", `{"model":"m","allowed_regions":"eu-west-1"}`},
		{"duplicate field", "m", `{"model":"m","allowed_regions":["eu-west-1"],"allowed_regions":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := configstore.DecodePolicy(tt.model, []byte(tt.value), 1); !errors.Is(err, configstore.ErrInvalid) {
				t.Fatalf("DecodePolicy(%s) = %v, want ErrInvalid", tt.value, err)
			}
		})
	}
}

func TestRoutingPolicy(t *testing.T) {
	tests := []struct {
		name string
		in   *adminv1.Policy
		want routing.Policy
	}{
		{"nil is the default", nil, routing.Policy{OverflowThreshold: 0.8}},
		{"unset fields take defaults", &adminv1.Policy{Model: "m"}, routing.Policy{OverflowThreshold: 0.8}},
		{"every field", validPolicy(), routing.Policy{
			OverflowThreshold: 0.7, AllowedRegions: []string{"eu-west-1", "eu-central-1"},
			OverflowCap: 50, TTFTSLO: 800 * time.Millisecond,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := configstore.RoutingPolicy(tt.in)
			if got.OverflowThreshold != tt.want.OverflowThreshold || got.OverflowCap != tt.want.OverflowCap ||
				got.TTFTSLO != tt.want.TTFTSLO || strings.Join(got.AllowedRegions, ",") != strings.Join(tt.want.AllowedRegions, ",") {
				t.Fatalf("RoutingPolicy = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// FuzzDecodePolicy feeds arbitrary stored values: decoding never panics, and whatever it accepts
// is a valid policy for the key's model that survives a round trip.
func FuzzDecodePolicy(f *testing.F) {
	seed, _ := configstore.EncodePolicy(validPolicy())
	f.Add("meta-llama/Llama-3.1-8B-Instruct", seed)
	f.Add("m", []byte(`{"model":"m","overflow_threshold":0.5,"allowed_regions":["a"]}`))
	f.Add("m", []byte(`{"model":"m","scorer_weights":{"rtt":1e308}}`))
	f.Add("m", []byte(`{"model":"m","overflow_cap":-3}`))
	f.Add("", []byte(`null`))
	f.Fuzz(func(t *testing.T, model string, value []byte) {
		p, err := configstore.DecodePolicy(model, value, 3)
		if err != nil {
			if !errors.Is(err, configstore.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if p.GetModel() != model || p.GetRevision() != 3 {
			t.Fatalf("decoded model %q revision %d, want %q 3", p.GetModel(), p.GetRevision(), model)
		}
		p.Revision = 0
		if err := configstore.ValidatePolicy(p); err != nil {
			t.Fatalf("accepted an invalid policy: %v", err)
		}
		b, err := configstore.EncodePolicy(p)
		if err != nil {
			t.Fatal(err)
		}
		again, err := configstore.DecodePolicy(model, b, 0)
		if err != nil || !proto.Equal(again, p) {
			t.Fatalf("round trip: %v, %v; want %v", again, err, p)
		}
	})
}
