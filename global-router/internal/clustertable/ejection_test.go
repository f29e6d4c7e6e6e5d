package clustertable_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
)

func TestMaxEjected(t *testing.T) {
	tests := []struct{ n, percent, want int }{
		{0, 50, 0}, {1, 50, 0}, {1, 100, 1}, {2, 50, 1}, {2, 1, 1}, {3, 50, 1}, {4, 50, 2}, {7, 50, 3},
		{10, 0, 0}, {10, 100, 10}, {10, 200, 10}, {10, -1, 0},
	}
	for _, tt := range tests {
		if got := clustertable.MaxEjected(tt.n, tt.percent); got != tt.want {
			t.Errorf("MaxEjected(%d, %d) = %d, want %d", tt.n, tt.percent, got, tt.want)
		}
	}
}

func TestEjectionConfigValidate(t *testing.T) {
	ok := clustertable.DefaultEjectionConfig()
	tests := []struct {
		name   string
		mutate func(*clustertable.EjectionConfig)
		want   string
	}{
		{"defaults", func(*clustertable.EjectionConfig) {}, ""},
		{"cap above 100", func(c *clustertable.EjectionConfig) { c.MaxEjectionPercent = 101 }, "MaxEjectionPercent"},
		{"negative cap", func(c *clustertable.EjectionConfig) { c.MaxEjectionPercent = -1 }, "MaxEjectionPercent"},
		{"ejection off", func(c *clustertable.EjectionConfig) { c.MaxEjectionPercent = 0 }, ""},
		{"no consecutive", func(c *clustertable.EjectionConfig) { c.Consecutive = 0 }, "Consecutive"},
		{"max below base", func(c *clustertable.EjectionConfig) { c.Max = c.Base / 2 }, "Max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mutate(&c)
			err := c.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate() = %v, want mention of %q", err, tt.want)
			}
		})
	}
}

// fleetOf returns fresh summaries of n us-east-1 clusters c1..cn serving llama, and stale ones
// of the given extra clusters.
func fleetOf(n int, stale ...string) source {
	t0 := time.Unix(1000, 0)
	var src source
	for i := 1; i <= n; i++ {
		c := fmt.Sprintf("c%d", i)
		src = append(src, summary(c, "us-east-1", "gw-"+c, "http://"+c, t0, false, model("llama", 2)))
	}
	for _, c := range stale {
		src = append(src, summary(c, "us-east-1", "gw-"+c, "http://"+c, t0, true, model("llama", 2)))
	}
	return src
}

// When every cluster fails, at most MaxEjectionPercent of the clusters with a fresh summary
// are ejected at once; the refusals are counted and the others stay candidates.
func TestEjectionCapOverClusters(t *testing.T) {
	tests := []struct {
		name        string
		src         source
		percent     int
		wantEjected int
	}{
		{"half of four", fleetOf(4), 50, 2},
		{"one of two", fleetOf(2), 50, 1},
		{"a lone cluster stays", fleetOf(1), 50, 0},
		{"stale clusters are not in the pool", fleetOf(2, "s1", "s2"), 50, 1},
		{"every one at 100%", fleetOf(3), 100, 3},
		{"none at 0%", fleetOf(3), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &clock{t: time.Unix(1000, 0)}
			reg := prometheus.NewRegistry()
			cfg := clustertable.Config{Region: "us-east-1", Now: clk.now, Registerer: reg}
			cfg.Ejection = clustertable.DefaultEjectionConfig()
			cfg.Ejection.MaxEjectionPercent = tt.percent
			tb := clustertable.New(cfg, tt.src, nil)
			fresh := 0
			for round := range 3 {
				for _, s := range tt.src {
					if !s.Stale {
						if round == 0 {
							fresh++
						}
						tb.Observe(forward.Outcome{Target: forward.Target{Cluster: s.Cluster}, Err: errors.New("connection refused")})
						tb.Observe(forward.Outcome{Target: forward.Target{Cluster: s.Cluster}, Status: 500})
					}
				}
			}
			unhealthy := 0
			for _, e := range routeView(tb, "llama", nil) {
				if e.Cluster.Unhealthy && !e.Cluster.Stale {
					unhealthy++
				}
			}
			if unhealthy != tt.wantEjected {
				t.Fatalf("%d of %d fresh clusters ejected, want %d", unhealthy, fresh, tt.wantEjected)
			}
			want := fmt.Sprintf(`
# HELP switchyard_router_cluster_ejections_total Passive-health ejections of clusters, by result: ejected, or refused because the share of clusters ejected at once had reached --max-ejection-percent.
# TYPE switchyard_router_cluster_ejections_total counter
switchyard_router_cluster_ejections_total{result="ejected"} %d
switchyard_router_cluster_ejections_total{result="refused"} %d
`, tt.wantEjected, 4*(fresh-tt.wantEjected)) // each kept cluster: a connection error per round, and its third 500 in a row
			if err := testutil.GatherAndCompare(
				reg,
				strings.NewReader(want),
				"switchyard_router_cluster_ejections_total",
			); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A cluster refused ejection is ejected once another's ejection ends.
func TestClusterEjectedOnceASlotFrees(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	tb := clustertable.New(
		clustertable.Config{Region: "us-east-1", Now: clk.now, Rand: func() float64 { return 0 }},
		fleetOf(2),
		nil,
	)
	down := func(c string) {
		tb.Observe(forward.Outcome{Target: forward.Target{Cluster: c}, Err: errors.New("connection refused")})
	}
	unhealthy := func() string {
		var out []string
		for _, e := range routeView(tb, "llama", nil) {
			if e.Cluster.Unhealthy {
				out = append(out, e.Cluster.Name)
			}
		}
		return strings.Join(out, ",")
	}
	down("c1")
	down("c2")
	if got := unhealthy(); got != "c1" {
		t.Fatalf("unhealthy %q, want c1 alone (one of two)", got)
	}
	clk.t = clk.t.Add(1100 * time.Millisecond) // c1's 1 s ejection is over
	down("c2")
	if got := unhealthy(); !strings.Contains(got, "c2") {
		t.Fatalf("unhealthy %q: c2 not ejected once c1's slot freed", got)
	}
}

var _ clustertable.Source = source(nil)
