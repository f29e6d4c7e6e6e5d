package giecompat_test

import (
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/giecompat"
	_ "github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/maxscore"
)

func TestTablesAreDisjointAndExplained(t *testing.T) {
	for typ, why := range giecompat.Ignored {
		if _, dup := giecompat.Unsupported[typ]; dup {
			t.Errorf("%s is both ignored and unsupported", typ)
		}
		if why == "" {
			t.Errorf("%s is ignored without a reason", typ)
		}
	}
	for typ, why := range giecompat.Unsupported {
		if why == "" {
			t.Errorf("%s is rejected without a reason", typ)
		}
	}
}

func TestRegistered(t *testing.T) {
	tests := []struct {
		typ     string
		wantErr bool
	}{
		{"single-profile-handler", false},
		{"metrics-data-source", false},
		{"token-load-scorer", true},
		{"vllmgrpc-parser", true},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			c, err := framework.ParseConfig(
				[]byte(
					"apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: " + tt.typ + "\n",
				),
			)
			if err != nil {
				t.Fatal(err)
			}
			_, err = framework.Build(c, framework.BuildOptions{})
			if tt.wantErr != (err != nil && strings.Contains(err.Error(), "is not supported")) || !tt.wantErr && err != nil {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}
