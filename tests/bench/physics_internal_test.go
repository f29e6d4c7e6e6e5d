package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/physics"
)

// TestPodSettings: the run's physics and cached-token setting reach every pod's configuration,
// and the report names them only when they are not modelsim's defaults.
func TestPodSettings(t *testing.T) {
	w, err := workload.Load("mixed-fleet")
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := Lookup("mixed-fleet")
	tests := []struct {
		name     string
		physics  physics.Config
		cached   bool
		wantNote string
	}{
		{"defaults", physics.DefaultConfig(), true, ""},
		{"calibrated", physics.Config{Family: physics.Attention, Jitter: 0.1}, false,
			"physics attention, step jitter σ 0.1, no cached_tokens in usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Physics, cfg.ReportCachedTokens = tt.physics, tt.cached
			cfgs, _ := fleetConfigs(sc, w, 1)
			cfg.podSettings(cfgs)
			for i, c := range cfgs {
				if c.Physics != string(tt.physics.Family) || c.PhysicsJitter != tt.physics.Jitter ||
					c.ReportCachedTokens != tt.cached {
					t.Fatalf("pod %d: physics %q jitter %v cached %v", i, c.Physics, c.PhysicsJitter, c.ReportCachedTokens)
				}
				if err := c.Validate(); err != nil {
					t.Fatal(err)
				}
			}
			if got := physicsNote(&cfg); got != tt.wantNote {
				t.Fatalf("note %q, want %q", got, tt.wantNote)
			}
		})
	}
}

// TestCapacityFollowsPhysics: the capacity search runs the chosen physics. Under BLIS's fit an
// a10g (derived: 172.5 µs per prefill token, 34 ms step base) sustains a different rate of the
// mixed-fleet shape than under the linear model, and both are in a plausible range.
func TestCapacityFollowsPhysics(t *testing.T) {
	w, err := workload.Load("mixed-fleet")
	if err != nil {
		t.Fatal(err)
	}
	got := map[physics.Family]float64{}
	for _, f := range []physics.Family{physics.Linear, physics.BLIS} {
		cc := DefaultCapacityConfig()
		cc.Physics = physics.Config{Family: f, Jitter: physics.FamilyDefaultJitter}
		c, _, err := MeasureCapacity(context.Background(), w, "a10g", cc)
		if err != nil {
			t.Fatal(err)
		}
		if c < 0.3 || c > 5 {
			t.Fatalf("%s: a10g capacity %.2f req/s outside 0.3..5", f, c)
		}
		got[f] = c
	}
	if r := got[physics.BLIS] / got[physics.Linear]; r > 0.97 && r < 1.03 {
		t.Fatalf("capacity %v: the physics made no difference", got)
	}
}

func TestMainRejectsBadPhysics(t *testing.T) {
	for _, args := range [][]string{
		{"--scenario=mixed-fleet", "--physics=cubic"},
		{"--scenario=mixed-fleet", "--physics=blis", "--physics-jitter=4"},
	} {
		var out, errb bytes.Buffer
		if code := Main(context.Background(), args, &out, &errb); code != 2 || !strings.Contains(errb.String(), "physics") {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}
