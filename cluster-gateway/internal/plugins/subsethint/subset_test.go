package subsethint_test

import (
	"context"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/subsethint"
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name string
		hint []string
		want string
	}{
		{"no hint", nil, "10.0.0.1:80 10.0.0.2:80 10.0.0.3:80"},
		{"subset", []string{"10.0.0.3:80", "10.0.0.1:80"}, "10.0.0.1:80 10.0.0.3:80"},
		{"unknown addresses", []string{"10.9.9.9:80"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eps := []framework.Endpoint{
				plugintest.NewEndpoint("10.0.0.1:80"),
				plugintest.NewEndpoint("10.0.0.2:80"),
				plugintest.NewEndpoint("10.0.0.3:80"),
			}
			got := subsethint.New("s").
				Filter(context.Background(), &framework.CycleState{}, &framework.Request{SubsetHint: tt.hint}, eps)
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
