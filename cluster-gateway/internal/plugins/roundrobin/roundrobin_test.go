package roundrobin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/roundrobin"
)

func TestRotation(t *testing.T) {
	eps := []framework.Endpoint{plugintest.NewEndpoint("a"), plugintest.NewEndpoint("b"), plugintest.NewEndpoint("c")}
	p, err := roundrobin.Factory("rr", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var firsts []string
	for range 7 {
		res := p.(framework.Picker).Pick(
			context.Background(),
			&framework.CycleState{},
			&framework.Request{},
			plugintest.Scored(eps, 0, 5, 0),
		)
		var all []string
		for _, e := range res.Targets {
			all = append(all, e.Meta().Address)
		}
		if len(firsts) == 1 && strings.Join(all, "") != "bca" {
			t.Fatalf("second pick targets %v, want b c a (fallbacks follow the rotation)", all)
		}
		firsts = append(firsts, all[0])
	}
	if got := strings.Join(firsts, ""); got != "abcabca" {
		t.Fatalf("rotation %q, want abcabca (scores ignored)", got)
	}
	if res := p.(framework.Picker).Pick(
		context.Background(),
		&framework.CycleState{},
		&framework.Request{},
		nil,
	); len(
		res.Targets,
	) != 0 {
		t.Fatal("targets from no candidates")
	}
}
