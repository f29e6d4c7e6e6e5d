package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeVLLM is a vLLM-like model server: Prometheus metrics, /v1/models and OpenAI completions.
type fakeVLLM struct {
	srv      *httptest.Server
	waiting  atomic.Int64
	requests atomic.Int64
	// failing makes completions answer 500, as a broken pod does.
	failing atomic.Bool
	// triton exports Triton's TensorRT-LLM metric families instead of vLLM's.
	triton atomic.Bool
	// hold, when set, holds every completion whose body contains holdMarker until it is closed
	// (or the client goes away); holding counts the completions held.
	hold    atomic.Pointer[chan struct{}]
	holding atomic.Int64
}

// holdMarker in a prompt makes a fake server with hold set keep the request in flight.
const holdMarker = "hold-me"

func newFakeVLLM(t *testing.T) *fakeVLLM {
	t.Helper()
	f := &fakeVLLM{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", f.metrics)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(
			w,
			`{"object":"list","data":[{"id":"llama","root":"llama","parent":null},{"id":"sql-lora","root":"/adapters/sql",`+
				`"parent":"llama"}]}`,
		)
	})
	mux.HandleFunc("POST /v1/completions", f.complete)
	mux.HandleFunc("POST /v1/chat/completions", f.complete)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeVLLM) addr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

func (f *fakeVLLM) metrics(w http.ResponseWriter, _ *http.Request) {
	if f.triton.Load() {
		fmt.Fprintf(w, `# TYPE nv_trt_llm_request_metrics gauge
nv_trt_llm_request_metrics{model="ensemble",request_type="scheduled",version="1"} 1
nv_trt_llm_request_metrics{model="ensemble",request_type="waiting",version="1"} %d
# TYPE nv_trt_llm_kv_cache_block_metrics gauge
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction",model="ensemble",version="1"} 0.1
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="max",model="ensemble",version="1"} 4096
`, f.waiting.Load())
		return
	}
	fmt.Fprintf(w, `# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="llama"} %d
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="llama"} 1
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="llama"} 0.1
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",num_gpu_blocks="10000"} 1
# TYPE vllm:lora_requests_info gauge
vllm:lora_requests_info{max_lora="4",running_lora_adapters="sql-lora",waiting_lora_adapters=""} 1.7e9
`, f.waiting.Load())
}

func (f *fakeVLLM) complete(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	if f.failing.Load() {
		http.Error(w, `{"error":{"message":"engine dead","type":"internal_error"}}`, http.StatusInternalServerError)
		return
	}
	var req struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	raw, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(raw, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if hold := f.hold.Load(); hold != nil && strings.Contains(string(raw), holdMarker) {
		f.holding.Add(1)
		select {
		case <-*hold:
		case <-r.Context().Done():
		}
		f.holding.Add(-1)
	}
	usage := `{"prompt_tokens":4,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":0}}`
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"model":%q,"choices":[{"text":"a b c"}],"usage":%s}`, req.Model, usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, tok := range []string{"a", "b", "c"} {
		fmt.Fprintf(w, "data: {\"model\":%q,\"choices\":[{\"text\":%q}]}\n\n", req.Model, tok)
		w.(http.Flusher).Flush()
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":%s}\n\n", usage)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}
