package randompicker_test

import (
	"context"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/randompicker"
)

func TestPickUniformDistinct(t *testing.T) {
	eps := []framework.Endpoint{
		plugintest.NewEndpoint("a"),
		plugintest.NewEndpoint("b"),
		plugintest.NewEndpoint("c"),
		plugintest.NewEndpoint("d"),
	}
	p, err := randompicker.Factory("r", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for range 4000 {
		res := p.(framework.Picker).Pick(
			context.Background(),
			&framework.CycleState{},
			&framework.Request{},
			plugintest.Scored(eps, 9, 0, 0, 0),
		)
		if len(res.Targets) != 3 {
			t.Fatalf("%d targets, want 3", len(res.Targets))
		}
		seen := map[string]bool{}
		for _, e := range res.Targets {
			if seen[e.Meta().Address] {
				t.Fatalf("duplicate target %s", e.Meta().Address)
			}
			seen[e.Meta().Address] = true
		}
		counts[res.Targets[0].Meta().Address]++
	}
	for a, n := range counts {
		if n < 800 || n > 1200 {
			t.Fatalf("not uniform (scores must be ignored): %s picked %d of 4000 (%v)", a, n, counts)
		}
	}
}
