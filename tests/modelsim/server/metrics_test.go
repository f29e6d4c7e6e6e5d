package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
)

// gather collects the families of a collector into a map by name.
func gather(t *testing.T, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	mf := mfs[name]
	if mf == nil || len(mf.Metric) == 0 {
		t.Fatalf("metric %s missing", name)
	}
	m := mf.Metric[0]
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestMetricsMatchEngineState runs a simulated engine into a loaded state (a10g: KV pressure,
// adapters waiting) and checks every exported figure against the engine's own snapshot.
func TestMetricsMatchEngineState(t *testing.T) {
	cfg := engine.DefaultConfig()
	cfg.Profile, _ = profile.Lookup("a10g")
	cfg.MaxLoras = 1
	sim, err := engine.NewSimulator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		r := engine.Request{Model: "m", Prompt: []byte(strings.Repeat(fmt.Sprint(i%4), 24000)),
			PromptTokens: 6000, MaxTokens: 300}
		if i%4 == 3 {
			r.Adapter = fmt.Sprint("lora-", i/4)
		}
		if _, err := sim.Submit(time.Duration(i)*100*time.Millisecond, r); err != nil {
			t.Fatal(err)
		}
	}
	sim.RunUntil(20 * time.Second)
	snap := sim.Engine().Snapshot()
	if snap.Waiting == 0 || snap.Running == 0 || snap.Stats.PrefixHits == 0 || len(snap.WaitingAdapters) == 0 {
		t.Fatalf("state not loaded enough for the test: %+v", snap)
	}
	scfg := DefaultConfig()
	scfg.Model = "m"
	mfs := gather(t, newCollector(scfg, sim.Engine()))
	checks := []struct {
		name string
		want float64
	}{
		{"vllm:num_requests_waiting", float64(snap.Waiting)},
		{"vllm:num_requests_running", float64(snap.Running)},
		{"vllm:kv_cache_usage_perc", snap.KVUsage()},
		{"vllm:gpu_cache_usage_perc", snap.KVUsage()},
		{"vllm:prefix_cache_queries_total", float64(snap.Stats.PrefixQueries)},
		{"vllm:prefix_cache_hits_total", float64(snap.Stats.PrefixHits)},
		{"vllm:num_preemptions_total", float64(snap.Stats.Preemptions)},
		{"vllm:generation_tokens_total", float64(snap.Stats.GenerationTokens)},
		{"vllm:time_to_first_token_seconds", float64(snap.Stats.TTFT.Count)},
		{"vllm:inter_token_latency_seconds", float64(snap.Stats.ITL.Count)},
	}
	for _, c := range checks {
		if got := value(t, mfs, c.name); got != c.want {
			t.Errorf("%s = %v, engine has %v", c.name, got, c.want)
		}
	}
	info := mfs["vllm:cache_config_info"].Metric[0]
	if label(info, "block_size") != "16" || label(info, "num_gpu_blocks") != fmt.Sprint(snap.TotalBlocks) {
		t.Errorf("cache_config_info labels %v", info.Label)
	}
	lora := mfs["vllm:lora_requests_info"].Metric[0]
	if label(lora, "max_lora") != "1" ||
		label(lora, "running_lora_adapters") != strings.Join(snap.RunningAdapters, ",") ||
		label(lora, "waiting_lora_adapters") != strings.Join(snap.WaitingAdapters, ",") ||
		lora.Gauge.GetValue() < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("lora_requests_info %v = %v; engine running %v waiting %v",
			lora.Label, lora.Gauge.GetValue(), snap.RunningAdapters, snap.WaitingAdapters)
	}
}

// TestEngineMetricNames checks that each engine kind exports its own names and no other's.
func TestEngineMetricNames(t *testing.T) {
	tests := []struct {
		engine  string
		want    []string
		notWant []string
	}{
		{EngineVLLM, []string{"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc",
			"vllm:gpu_cache_usage_perc", "vllm:cache_config_info", "vllm:lora_requests_info"},
			[]string{"sglang:num_queue_reqs", "trtllm_num_requests_waiting"}},
		{EngineSGLang, []string{"sglang:num_queue_reqs", "sglang:num_running_reqs", "sglang:token_usage",
			"sglang:cache_config_info"}, []string{"vllm:num_requests_waiting", "vllm:lora_requests_info"}},
		{EngineTRTLLM, []string{"trtllm_num_requests_waiting", "trtllm_num_requests_running",
			"trtllm_kv_cache_utilization", "trtllm_kv_cache_tokens_per_block", "trtllm_kv_cache_max_blocks"},
			[]string{"vllm:num_requests_waiting", "sglang:token_usage"}},
	}
	for _, tt := range tests {
		t.Run(tt.engine, func(t *testing.T) {
			e, err := engine.New(engine.DefaultConfig(), nil)
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.Engine = tt.engine
			mfs := gather(t, newCollector(cfg, e))
			for _, n := range tt.want {
				if mfs[n] == nil {
					t.Errorf("%s missing", n)
				}
			}
			for _, n := range tt.notWant {
				if mfs[n] != nil {
					t.Errorf("%s exported by %s", n, tt.engine)
				}
			}
		})
	}
}

// BenchmarkScrape measures one /metrics collection and encoding of a busy vLLM server's state.
func BenchmarkScrape(b *testing.B) {
	e, err := engine.New(engine.DefaultConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(DefaultConfig(), e))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
