package server_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

// scrape fetches /metrics and returns the value of each metric's first series by family name.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		if len(mf.Metric) == 0 {
			continue
		}
		m := mf.Metric[0]
		switch {
		case m.Gauge != nil:
			out[name] = m.Gauge.GetValue()
		case m.Counter != nil:
			out[name] = m.Counter.GetValue()
		case m.Histogram != nil:
			out[name] = float64(m.Histogram.GetSampleCount())
		}
	}
	return out
}

func TestMetricNamesPerEngine(t *testing.T) {
	tests := []struct {
		engine  string
		want    []string
		notWant string
	}{
		{server.EngineVLLM, []string{"vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "vllm:lora_requests_info",
			"vllm:cache_config_info", "vllm:prefix_cache_hits_total", "vllm:time_to_first_token_seconds"}, "sglang:token_usage"},
		{server.EngineSGLang, []string{"sglang:num_queue_reqs", "sglang:num_running_reqs", "sglang:token_usage",
			"sglang:cache_config_info"}, "vllm:num_requests_waiting"},
		{server.EngineTRTLLM, []string{"trtllm_num_requests_waiting", "trtllm_num_requests_running",
			"trtllm_kv_cache_utilization", "trtllm_kv_cache_tokens_per_block", "trtllm_kv_cache_max_blocks"},
			"vllm:num_requests_waiting"},
	}
	for _, tt := range tests {
		t.Run(tt.engine, func(t *testing.T) {
			base, _ := start(t, func(c *server.Config) { c.Engine = tt.engine })
			if r, b := post(t, base+"/v1/completions", `{"model":"llama","prompt":"hi","max_tokens":2}`); r.StatusCode != 200 {
				t.Fatalf("%d %s", r.StatusCode, b)
			}
			got := scrape(t, base)
			for _, n := range tt.want {
				if _, ok := got[n]; !ok {
					t.Errorf("%s missing", n)
				}
			}
			if _, ok := got[tt.notWant]; ok {
				t.Errorf("%s exported with engine %s", tt.notWant, tt.engine)
			}
		})
	}
}

// TestKVExhaustionShowsInMetrics floods an a10g (30,000 KV tokens) with 6,000-token prompts and
// expects /metrics to report waiting requests and a nearly full cache, then an empty queue.
func TestKVExhaustionShowsInMetrics(t *testing.T) {
	base, _ := start(t, func(c *server.Config) { c.Profile, c.TimeScale = "a10g", 0.01 })
	var wg sync.WaitGroup
	for i := range 10 {
		body := fmt.Sprintf(`{"model":"llama","prompt":"%s","max_tokens":500}`, strings.Repeat(fmt.Sprintf("%04d", i), 6000))
		wg.Go(func() {
			resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	var waiting, usage float64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		m := scrape(t, base)
		if m["vllm:num_requests_waiting"] > 0 && m["vllm:kv_cache_usage_perc"] > 0.75 {
			waiting, usage = m["vllm:num_requests_waiting"], m["vllm:kv_cache_usage_perc"]
			break
		}
	}
	wg.Wait()
	if waiting == 0 {
		t.Fatal("vllm:num_requests_waiting never rose with a full KV cache")
	}
	m := scrape(t, base)
	if m["vllm:num_requests_waiting"] != 0 || m["vllm:num_requests_running"] != 0 ||
		m["vllm:request_success_total"] != 10 || m["vllm:generation_tokens_total"] != 5000 {
		t.Fatalf("after drain: %v (saw waiting=%v usage=%v)", m, waiting, usage)
	}
}

// BenchmarkMetricsEndpoint measures one /metrics request through the server's handler (collect,
// gather and text encoding), as a gateway scraping every 50 ms would cost it.
func BenchmarkMetricsEndpoint(b *testing.B) {
	cfg := server.DefaultConfig()
	cfg.LoRAs, cfg.MaxLoras = []string{"a", "b"}, 2
	s, err := server.New(cfg, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}
