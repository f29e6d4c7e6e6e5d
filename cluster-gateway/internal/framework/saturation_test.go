package framework_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

var satNow = plugintest.Epoch.Add(time.Minute)

// endpointIn builds an endpoint in a named condition at satNow.
func endpointIn(t *testing.T, state string) *plugintest.FakeEndpoint {
	t.Helper()
	fresh := satNow.Add(-100 * time.Millisecond)
	switch state {
	case "idle":
		return plugintest.Endpoint(state, "m", 0, 1, 0.1, fresh)
	case "queue4":
		return plugintest.Endpoint(state, "m", 4, 1, 0.1, fresh)
	case "queue5":
		return plugintest.Endpoint(state, "m", 5, 1, 0.1, fresh)
	case "kv79":
		return plugintest.Endpoint(state, "m", 0, 1, 0.79, fresh)
	case "kv80":
		return plugintest.Endpoint(state, "m", 0, 1, 0.8, fresh)
	case "stale":
		return plugintest.Endpoint(state, "m", 0, 1, 0.1, satNow.Add(-3*time.Second))
	case "scrape-failing":
		e := plugintest.Endpoint(state, "m", 0, 1, 0.1, fresh)
		e.RecordScrapeFailure()
		return e
	case "no-metrics":
		return plugintest.NewEndpoint(state)
	case "ejected":
		e := plugintest.Endpoint(state, "m", 0, 1, 0.1, fresh)
		e.EjectUntil(satNow.Add(time.Second))
		return e
	}
	t.Fatalf("unknown state %q", state)
	return nil
}

func TestSaturation(t *testing.T) {
	tests := []struct {
		state     string
		headroom  float64
		saturated bool
		unfit     bool
		load      float64
	}{
		{state: "idle", load: 0.125},
		{state: "queue4", load: 0.8},
		{state: "queue5", saturated: true, load: 1},
		{state: "queue5", headroom: 0.2, load: 1}, // 5 < 5·1.2
		{state: "kv79", load: 0.79 / 0.8},
		{state: "kv80", saturated: true, unfit: true, load: 1},
		{state: "kv80", headroom: 0.1, load: 1}, // 0.8 < 0.88
		{state: "stale", saturated: true, unfit: true, load: 1},
		{state: "scrape-failing", saturated: true, unfit: true, load: 1},
		{state: "no-metrics", saturated: true, unfit: true, load: 1},
		{state: "ejected", saturated: true, unfit: true, load: 0.125}, // load reads the metrics only
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/headroom=%g", tt.state, tt.headroom), func(t *testing.T) {
			s := framework.DefaultSaturation()
			s.Headroom = tt.headroom
			e := endpointIn(t, tt.state)
			if got := s.Saturated(e, satNow); got != tt.saturated {
				t.Errorf("Saturated = %v, want %v", got, tt.saturated)
			}
			if m, got := s.Unfit(e, satNow); got != tt.unfit || (!got && m != e.Metrics()) {
				t.Errorf("Unfit = %v, %v; want %v (with the metrics when fit)", m, got, tt.unfit)
			}
			if got := s.Load(e, satNow); math.Abs(got-tt.load) > 1e-9 {
				t.Errorf("Load = %v, want %v", got, tt.load)
			}
		})
	}
}

func TestSaturationQueueOver(t *testing.T) {
	s := framework.DefaultSaturation()
	for waiting, want := range map[float64]bool{0: false, 4.99: false, 5: true, 9: true} {
		if got := s.QueueOver(waiting); got != want {
			t.Errorf("QueueOver(%g) = %v, want %v", waiting, got, want)
		}
	}
	s.Headroom = 1
	if s.QueueOver(9) || !s.QueueOver(10) {
		t.Error("with headroom 1 the queue limit is 10")
	}
}

func TestMeanLoad(t *testing.T) {
	s := framework.DefaultSaturation()
	eps := plugintest.Endpoints(
		endpointIn(t, "idle"),
		endpointIn(t, "queue5"),
		endpointIn(t, "stale"),
		endpointIn(t, "queue4"),
	)
	want := (0.125 + 1 + 1 + 0.8) / 4
	if got := framework.MeanLoad(&s, eps, satNow); math.Abs(got-want) > 1e-9 {
		t.Fatalf("MeanLoad = %v, want %v", got, want)
	}
	if got := framework.MeanLoad(&s, nil, satNow); got != 1 {
		t.Fatalf("MeanLoad of no endpoints = %v, want 1 (nothing to send to)", got)
	}
	for figure, want := range map[float64]bool{0: false, 0.999: false, 1: true, 3: true} {
		if got := framework.PoolSaturated(figure); got != want {
			t.Errorf("PoolSaturated(%g) = %v, want %v", figure, got, want)
		}
	}
}

func TestSaturatedShare(t *testing.T) {
	tests := []struct {
		saturated, ready int
		share            float64
		all              bool
	}{
		{0, 0, 1, true},
		{0, 4, 0, false},
		{1, 4, 0.25, false},
		{4, 4, 1, true},
	}
	for _, tt := range tests {
		share, all := framework.SaturatedShare(tt.saturated, tt.ready)
		if share != tt.share || all != tt.all {
			t.Errorf("SaturatedShare(%d, %d) = %v, %v; want %v, %v", tt.saturated, tt.ready, share, all, tt.share, tt.all)
		}
	}
}

func TestIsSaturated(t *testing.T) {
	if !framework.IsSaturated(fmt.Errorf("admit: %w", framework.ErrSaturated)) {
		t.Error("a wrapped ErrSaturated is saturation")
	}
	if framework.IsSaturated(errors.New("scheduling: all candidate endpoints are saturated")) {
		t.Error("only the sentinel is saturation, not its text")
	}
}

func TestSaturationValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*framework.Saturation)
		field  string
	}{
		{"defaults", func(*framework.Saturation) {}, ""},
		{"queue", func(s *framework.Saturation) { s.Queue = 0 }, "queueDepthThreshold"},
		{"kv zero", func(s *framework.Saturation) { s.KV = 0 }, "kvCacheUtilThreshold"},
		{"kv over 1", func(s *framework.Saturation) { s.KV = 1.1 }, "kvCacheUtilThreshold"},
		{"staleness", func(s *framework.Saturation) { s.Staleness = 0 }, "metricsStalenessThreshold"},
		{"headroom", func(s *framework.Saturation) { s.Headroom = -0.1 }, "headroom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := framework.DefaultSaturation()
			tt.mutate(&s)
			err := s.Validate()
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.field != "" && (err == nil || !strings.Contains(err.Error(), tt.field)):
				t.Fatalf("Validate: %v, want an error naming %s", err, tt.field)
			}
		})
	}
}
