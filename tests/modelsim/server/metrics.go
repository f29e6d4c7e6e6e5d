package server

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
)

// metricNames are the metric names of one inference engine; "" means the engine has no such metric.
type metricNames struct {
	waiting, running, kvUsage, kvUsageOld     string
	cacheInfo, cacheBlockLabel, cacheNumLabel string
	kvBlockSize, kvMaxBlocks                  string // trtllm's separate gauges
	loraInfo                                  string
	prefixQueries, prefixHits, preemptions    string
	success, promptTokens, genTokens          string
	ttft, itl                                 string
	// vLLM's per-request phase histograms and tokens per engine step.
	e2e, queue, prefill, decode, inference, iterationTokens string
}

var engineMetrics = map[string]metricNames{
	EngineVLLM: {
		waiting: "vllm:num_requests_waiting", running: "vllm:num_requests_running",
		kvUsage: "vllm:kv_cache_usage_perc", kvUsageOld: "vllm:gpu_cache_usage_perc",
		cacheInfo: "vllm:cache_config_info", cacheBlockLabel: "block_size", cacheNumLabel: "num_gpu_blocks",
		loraInfo:      "vllm:lora_requests_info",
		prefixQueries: "vllm:prefix_cache_queries_total", prefixHits: "vllm:prefix_cache_hits_total",
		preemptions: "vllm:num_preemptions_total", success: "vllm:request_success_total",
		promptTokens: "vllm:prompt_tokens_total", genTokens: "vllm:generation_tokens_total",
		ttft: "vllm:time_to_first_token_seconds", itl: "vllm:inter_token_latency_seconds",
		e2e: "vllm:e2e_request_latency_seconds", queue: "vllm:request_queue_time_seconds",
		prefill: "vllm:request_prefill_time_seconds", decode: "vllm:request_decode_time_seconds",
		inference: "vllm:request_inference_time_seconds", iterationTokens: "vllm:iteration_tokens_total",
	},
	EngineSGLang: {
		waiting: "sglang:num_queue_reqs", running: "sglang:num_running_reqs", kvUsage: "sglang:token_usage",
		cacheInfo: "sglang:cache_config_info", cacheBlockLabel: "page_size", cacheNumLabel: "num_pages",
		promptTokens: "sglang:prompt_tokens_total", genTokens: "sglang:generation_tokens_total",
		ttft: "sglang:time_to_first_token_seconds", itl: "sglang:inter_token_latency_seconds",
	},
	EngineTRTLLM: {
		waiting: "trtllm_num_requests_waiting", running: "trtllm_num_requests_running",
		kvUsage:     "trtllm_kv_cache_utilization",
		kvBlockSize: "trtllm_kv_cache_tokens_per_block", kvMaxBlocks: "trtllm_kv_cache_max_blocks",
		ttft: "trtllm_time_to_first_token_seconds", itl: "trtllm_inter_token_latency_seconds",
	},
}

// snapshotter is what the collector needs from the engine.
type snapshotter interface {
	Snapshot() engine.Snapshot
}

// collector exports the engine's state at scrape time from one consistent snapshot, so the metrics
// always agree with each other and with the engine.
type collector struct {
	src   snapshotter
	model string
	descs map[string]*prometheus.Desc
	names metricNames

	mu        sync.Mutex
	loraKey   string
	loraStamp float64
}

func newCollector(cfg Config, src snapshotter) *collector {
	n := engineMetrics[cfg.Engine]
	c := &collector{src: src, model: cfg.Model, names: n, descs: map[string]*prometheus.Desc{}}
	ml := []string{"model_name"}
	c.add(n.waiting, "Number of requests waiting to be processed.", ml)
	c.add(n.running, "Number of requests in model execution batches.", ml)
	c.add(n.kvUsage, "KV-cache usage. 1 means 100 percent usage.", ml)
	c.add(n.kvUsageOld, "GPU KV-cache usage. 1 means 100 percent usage (deprecated name).", ml)
	c.add(n.cacheInfo, "Information of the KV cache configuration.", []string{n.cacheBlockLabel, n.cacheNumLabel})
	c.add(n.kvBlockSize, "Tokens per KV-cache block.", nil)
	c.add(n.kvMaxBlocks, "Number of KV-cache blocks.", nil)
	c.add(n.loraInfo, "Running stats on LoRA requests (value: unix time of the last change).",
		[]string{"running_lora_adapters", "waiting_lora_adapters", "max_lora"})
	c.add(n.prefixQueries, "Prefix cache queries, in terms of number of queried tokens.", ml)
	c.add(n.prefixHits, "Prefix cache hits, in terms of number of cached tokens.", ml)
	c.add(n.preemptions, "Cumulative number of preemptions from the engine.", ml)
	c.add(n.success, "Count of successfully processed requests.", []string{"finished_reason", "model_name"})
	c.add(n.promptTokens, "Number of prefill tokens processed.", ml)
	c.add(n.genTokens, "Number of generation tokens processed.", ml)
	c.add(n.ttft, "Histogram of time to first token in seconds.", ml)
	c.add(n.itl, "Histogram of inter-token latency in seconds.", ml)
	c.add(n.e2e, "Histogram of e2e request latency in seconds.", ml)
	c.add(n.queue, "Histogram of time spent in WAITING phase for request.", ml)
	c.add(n.prefill, "Histogram of time spent in PREFILL phase for request.", ml)
	c.add(n.decode, "Histogram of time spent in DECODE phase for request.", ml)
	c.add(n.inference, "Histogram of time spent in RUNNING phase for request.", ml)
	c.add(n.iterationTokens, "Histogram of number of tokens per engine_step.", ml)
	c.add(
		"modelsim_clock_lag_seconds",
		"How far (simulated seconds) the engine loop ended its last step behind schedule.",
		nil,
	)
	c.add(
		"modelsim_step_lag_seconds",
		"Histogram of how late (simulated seconds) engine steps ended versus schedule.",
		nil,
	)
	return c
}

func (c *collector) add(name, help string, labels []string) {
	if name != "" {
		c.descs[name] = prometheus.NewDesc(name, help, labels, nil)
	}
}

// Describe sends every descriptor.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect sends the metrics of one engine snapshot.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Snapshot()
	n := c.names
	c.gauge(ch, n.waiting, float64(s.Waiting), c.model)
	c.gauge(ch, n.running, float64(s.Running), c.model)
	c.gauge(ch, n.kvUsage, s.KVUsage(), c.model)
	c.gauge(ch, n.kvUsageOld, s.KVUsage(), c.model)
	c.gauge(ch, n.cacheInfo, 1, strconv.Itoa(s.BlockSize), strconv.Itoa(s.TotalBlocks))
	c.gauge(ch, n.kvBlockSize, float64(s.BlockSize))
	c.gauge(ch, n.kvMaxBlocks, float64(s.TotalBlocks))
	if n.loraInfo != "" {
		run, wait := strings.Join(s.RunningAdapters, ","), strings.Join(s.WaitingAdapters, ",")
		c.gauge(ch, n.loraInfo, c.loraTimestamp(run+"|"+wait), run, wait, strconv.Itoa(s.MaxLoras))
	}
	st := s.Stats
	c.counter(ch, n.prefixQueries, float64(st.PrefixQueries), c.model)
	c.counter(ch, n.prefixHits, float64(st.PrefixHits), c.model)
	c.counter(ch, n.preemptions, float64(st.Preemptions), c.model)
	for reason, v := range st.Finished {
		c.counter(ch, n.success, float64(v), reason, c.model)
	}
	c.counter(ch, n.promptTokens, float64(st.PromptTokens), c.model)
	c.counter(ch, n.genTokens, float64(st.GenerationTokens), c.model)
	c.histogram(ch, n.ttft, st.TTFT, c.model)
	c.histogram(ch, n.itl, st.ITL, c.model)
	c.histogram(ch, n.e2e, st.E2E, c.model)
	c.histogram(ch, n.queue, st.Queue, c.model)
	c.histogram(ch, n.prefill, st.Prefill, c.model)
	c.histogram(ch, n.decode, st.Decode, c.model)
	c.histogram(ch, n.inference, st.Inference, c.model)
	c.histogram(ch, n.iterationTokens, st.IterationTokens, c.model)
	c.gauge(ch, "modelsim_clock_lag_seconds", st.LastLag.Seconds())
	c.histogram(ch, "modelsim_step_lag_seconds", st.Lag)
}

// loraTimestamp returns the unix time at which the adapter label set last changed.
func (c *collector) loraTimestamp(key string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if key != c.loraKey || c.loraStamp == 0 {
		c.loraKey = key
		c.loraStamp = float64(time.Now().UnixNano()) / 1e9
	}
	return c.loraStamp
}

func (c *collector) gauge(ch chan<- prometheus.Metric, name string, v float64, labels ...string) {
	if d := c.descs[name]; d != nil {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
}

func (c *collector) counter(ch chan<- prometheus.Metric, name string, v float64, labels ...string) {
	if d := c.descs[name]; d != nil {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
}

func (c *collector) histogram(ch chan<- prometheus.Metric, name string, h engine.Histogram, labels ...string) {
	d := c.descs[name]
	if d == nil {
		return
	}
	buckets := make(map[float64]uint64, len(h.Bounds))
	var cum uint64
	for i, b := range h.Bounds {
		cum += h.Counts[i]
		buckets[b] = cum
	}
	ch <- prometheus.MustNewConstHistogram(d, h.Count, h.Sum, buckets, labels...)
}
