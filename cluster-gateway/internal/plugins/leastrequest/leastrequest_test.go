package leastrequest_test

import (
	"context"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/leastrequest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

func TestPickFewestInFlight(t *testing.T) {
	inflight := map[string]int64{"a": 3, "b": 0, "c": 1, "d": 7}
	var eps []framework.Endpoint
	for _, a := range []string{"a", "b", "c", "d"} {
		e := plugintest.NewEndpoint(a)
		e.AddInFlight(inflight[a])
		eps = append(eps, e)
	}
	p, err := leastrequest.Factory("l", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Scores are ignored: the highest-scored endpoint has the most in flight.
	res := p.(framework.Picker).Pick(
		context.Background(),
		&framework.CycleState{},
		&framework.Request{},
		plugintest.Scored(eps, 1, 0, 0, 9),
	)
	got := ""
	for _, e := range res.Targets {
		got += e.Meta().Address
	}
	if got != "bca" {
		t.Fatalf("targets %q, want bca", got)
	}
}

func TestPickSpreadsBurst(t *testing.T) {
	eps := []framework.Endpoint{plugintest.NewEndpoint("a"), plugintest.NewEndpoint("b"), plugintest.NewEndpoint("c")}
	p, _ := leastrequest.Factory("l", nil, nil)
	for range 9 {
		res := p.(framework.Picker).Pick(
			context.Background(),
			&framework.CycleState{},
			&framework.Request{},
			plugintest.Scored(eps, 0, 0, 0),
		)
		res.Targets[0].(*plugintest.FakeEndpoint).AddInFlight(1)
	}
	for _, e := range eps {
		if e.InFlight() != 3 {
			t.Fatalf("%s has %d in flight, want 3", e.Meta().Address, e.InFlight())
		}
	}
}
