package rolefilter_test

import (
	"context"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/rolefilter"
)

func TestFilters(t *testing.T) {
	label := func(v string) map[string]string { return map[string]string{framework.RoleLabel: v} }
	eps := plugintest.Endpoints(
		plugintest.NewLabeledEndpoint("p", label("prefill")),
		plugintest.NewLabeledEndpoint("d", label("decode")),
		plugintest.NewLabeledEndpoint("b", label("both")),
		plugintest.NewLabeledEndpoint("pd", label("prefill-decode")),
		plugintest.NewEndpoint("none"),
		plugintest.NewLabeledEndpoint("odd", label("Prefill")),
	)
	tests := []struct {
		typ  string
		want []string
	}{
		{rolefilter.PrefillType, []string{"p", "b", "pd"}},
		{rolefilter.DecodeType, []string{"d", "b", "pd", "none", "odd"}},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			in := append([]framework.Endpoint(nil), eps...)
			got := rolefilter.New(tt.typ, tt.typ).Filter(context.Background(), nil, nil, in)
			if len(got) != len(tt.want) {
				t.Fatalf("kept %d, want %v", len(got), tt.want)
			}
			for i, e := range got {
				if e.Meta().Address != tt.want[i] {
					t.Errorf("kept[%d] = %s, want %s", i, e.Meta().Address, tt.want[i])
				}
			}
		})
	}
}

func TestParseRole(t *testing.T) {
	tests := []struct {
		in   string
		want framework.Role
		ok   bool
	}{
		{"", framework.RoleBoth, true},
		{"both", framework.RoleBoth, true},
		{"prefill-decode", framework.RoleBoth, true},
		{"prefill", framework.RolePrefill, true},
		{"decode", framework.RoleDecode, true},
		{"Decode", framework.RoleBoth, false},
		{"encode", framework.RoleBoth, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := framework.ParseRole(tt.in)
			if got != tt.want || (err == nil) != tt.ok {
				t.Fatalf("ParseRole(%q) = %v, %v", tt.in, got, err)
			}
		})
	}
}

func TestNoParameters(t *testing.T) {
	f, _ := framework.DefaultRegistry.Lookup(rolefilter.DecodeType)
	if _, err := f("d", []byte(`{"role":"decode"}`), nil); err == nil {
		t.Fatal("a parameter was accepted")
	}
}
