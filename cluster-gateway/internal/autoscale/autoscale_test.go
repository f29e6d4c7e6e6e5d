package autoscale_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/autoscale"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// pool is a ModelCapacity of ready pods with kv in use (share), queue waiting and a mean
// predicted TTFT in ms.
func pool(name string, ready int, kv float64, queue int, ttftMs float32) *gossipv1.ModelCapacity {
	total := uint64(ready) * 100000
	return &gossipv1.ModelCapacity{
		Name: name, ReadyPods: uint32(ready), TotalKvTokens: total,
		FreeKvTokens: uint64(float64(total) * (1 - kv)), QueueDepth: uint32(queue), MeanPredictedTtftMs: ttftMs,
	}
}

type source struct {
	mu     sync.Mutex
	models []*gossipv1.ModelCapacity
}

func (s *source) Capacity() *gossipv1.CapacitySummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &gossipv1.CapacitySummary{Models: s.models}
}

func (s *source) set(models ...*gossipv1.ModelCapacity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = models
}

func TestDesiredReplicas(t *testing.T) {
	base := autoscale.DefaultConfig()
	base.ScaleDownWindow = 0
	for _, tt := range []struct {
		name   string
		cfg    func(*autoscale.Config)
		pool   *gossipv1.ModelCapacity
		want   int
		signal string
	}{
		{"sized right on kv", nil, pool("m", 4, 0.75, 0, 500), 4, "kv"},
		{"within tolerance", nil, pool("m", 10, 0.80, 0, 500), 10, "kv"},
		{"kv over target", nil, pool("m", 4, 0.9, 0, 500), 5, "kv"},        // ceil(4 × 1.2)
		{"queue over target", nil, pool("m", 4, 0.5, 24, 500), 8, "queue"}, // 6 per pod / 2 = 3×, capped at 2× or +4
		{"queue cap is ready+4 for a small pool", nil, pool("m", 1, 0.5, 40, 500), 5, "queue"},
		{"ttft over target", nil, pool("m", 4, 0.3, 0, 3000), 6, "ttft"}, // ceil(4 × 1.5)
		{"ttft off", func(c *autoscale.Config) { c.TargetTTFT = 0 }, pool("m", 4, 0.3, 0, 3000), 2, "kv"},
		{"idle pool shrinks to the min", nil, pool("m", 4, 0, 0, 0), 1, "kv"},
		{"idle pool with min 0", func(c *autoscale.Config) { c.MinReplicas = 0 }, pool("m", 4, 0, 0, 0), 0, "kv"},
		{"underused pool shrinks", nil, pool("m", 8, 0.3, 0, 200), 4, "kv"}, // ceil(8 × 0.4)
		{"no ready pod, requests waiting", func(c *autoscale.Config) { c.MinReplicas = 0 },
			pool("m", 0, 0, 3, 0), 1, "kv"},
		{"no ready pod, nothing waiting", func(c *autoscale.Config) { c.MinReplicas = 0 },
			pool("m", 0, 0, 0, 0), 0, "kv"},
		{"max replicas", func(c *autoscale.Config) { c.MaxReplicas = 6 }, pool("m", 5, 1, 0, 0), 6, "kv"},
		{"higher scale-up factor", func(c *autoscale.Config) { c.MaxScaleUpFactor = 10 },
			pool("m", 4, 0.5, 80, 0), 40, "queue"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			src := &source{}
			src.set(tt.pool)
			a, err := autoscale.New(cfg, src, autoscale.Options{})
			if err != nil {
				t.Fatal(err)
			}
			recs := a.Step()
			if len(recs) != 1 {
				t.Fatalf("%d recommendations, want 1", len(recs))
			}
			if _, signal := recs[0].Ratios.Max(); recs[0].Desired != tt.want || signal != tt.signal {
				t.Errorf("desired %d by %s (ratios %+v), want %d by %s", recs[0].Desired, signal, recs[0].Ratios,
					tt.want, tt.signal)
			}
		})
	}
}

// A lower recommendation is published only once it has held for the scale-down window; a higher
// one at once.
func TestScaleDownWindow(t *testing.T) {
	cfg := autoscale.DefaultConfig()
	cfg.ScaleDownWindow = time.Minute
	now := time.Unix(1000, 0)
	src := &source{}
	a, err := autoscale.New(cfg, src, autoscale.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	step := func(want int) {
		t.Helper()
		recs := a.Step()
		if len(recs) != 1 || recs[0].Desired != want {
			t.Fatalf("at %v: %+v, want desired %d", now.Sub(time.Unix(1000, 0)), recs, want)
		}
	}
	src.set(pool("m", 4, 0.75, 0, 0))
	step(4)
	src.set(pool("m", 4, 1, 16, 0)) // a burst: 4 queued per pod
	now = now.Add(5 * time.Second)
	step(8)
	src.set(pool("m", 8, 0.3, 0, 0)) // the lull after it
	for range 11 {
		now = now.Add(5 * time.Second)
		step(8)
	}
	now = now.Add(6 * time.Second) // the burst's reading is now older than the window
	step(4)
}

func TestModelGoneDropsItsSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	src := &source{}
	src.set(pool("a", 2, 0.75, 0, 0), pool("b", 3, 0.75, 0, 0))
	a, err := autoscale.New(autoscale.DefaultConfig(), src, autoscale.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	a.Step()
	want := `
# HELP switchyard_gateway_desired_replicas ` + helpOf(t, reg, "switchyard_gateway_desired_replicas") + `
# TYPE switchyard_gateway_desired_replicas gauge
switchyard_gateway_desired_replicas{model="a"} 2
switchyard_gateway_desired_replicas{model="b"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "switchyard_gateway_desired_replicas"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "switchyard_gateway_autoscale_ratio"); n != 6 {
		t.Fatalf("%d ratio series, want 6 (two models × three signals)", n)
	}
	src.set(pool("b", 3, 0.75, 0, 0))
	a.Step()
	for name, want := range map[string]int{
		"switchyard_gateway_desired_replicas": 1, "switchyard_gateway_ready_replicas": 1,
		"switchyard_gateway_autoscale_ratio": 3,
	} {
		if n := testutil.CollectAndCount(reg, name); n != want {
			t.Errorf("%s: %d series after model a went, want %d", name, n, want)
		}
	}
	if recs := a.Recommendations(); len(recs) != 1 || recs[0].Model != "b" {
		t.Fatalf("recommendations %+v, want b only", recs)
	}
}

func helpOf(t *testing.T, reg *prometheus.Registry, name string) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetHelp()
		}
	}
	t.Fatalf("%s not gathered", name)
	return ""
}

func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		mod  func(*autoscale.Config)
		want string
	}{
		{"defaults", func(*autoscale.Config) {}, ""},
		{"interval", func(c *autoscale.Config) { c.Interval = 0 }, "interval"},
		{"kv above 1", func(c *autoscale.Config) { c.TargetKVUtilization = 1.5 }, "KV utilization"},
		{"kv zero", func(c *autoscale.Config) { c.TargetKVUtilization = 0 }, "KV utilization"},
		{"queue", func(c *autoscale.Config) { c.TargetQueuePerPod = 0 }, "queue per pod"},
		{"ttft", func(c *autoscale.Config) { c.TargetTTFT = -time.Second }, "TTFT"},
		{"tolerance", func(c *autoscale.Config) { c.Tolerance = 1 }, "tolerance"},
		{"window", func(c *autoscale.Config) { c.ScaleDownWindow = -1 }, "window"},
		{"factor", func(c *autoscale.Config) { c.MaxScaleUpFactor = 1 }, "scale-up factor"},
		{"min", func(c *autoscale.Config) { c.MinReplicas = -1 }, "min replicas"},
		{"max below min", func(c *autoscale.Config) { c.MinReplicas, c.MaxReplicas = 3, 2 }, "below the min"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := autoscale.DefaultConfig()
			tt.mod(&c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want one naming %q", err, tt.want)
			}
		})
	}
}

func BenchmarkStep(b *testing.B) {
	models := make([]*gossipv1.ModelCapacity, 20)
	for i := range models {
		models[i] = pool("model-"+string(rune('a'+i)), 8, 0.6, 4, 800)
	}
	src := &source{}
	src.set(models...)
	a, err := autoscale.New(autoscale.DefaultConfig(), src, autoscale.Options{Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		a.Step()
	}
}
