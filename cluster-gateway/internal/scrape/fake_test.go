package scrape_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
)

// fakeServer is an in-process model server exporting one engine's metrics and a model list.
type fakeServer struct {
	srv      *httptest.Server
	engine   datastore.Engine
	queue    atomic.Int64
	fail     atomic.Bool
	scrapes  atomic.Int64
	newConns atomic.Int64
	models   string
}

func newFakeServer(tb testing.TB, engine datastore.Engine, models string) *fakeServer {
	tb.Helper()
	f := &fakeServer{engine: engine, models: models}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", f.serveMetrics)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, f.models)
	})
	f.srv = httptest.NewUnstartedServer(mux)
	f.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.newConns.Add(1)
		}
	}
	f.srv.Start()
	tb.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) addr() string { return f.srv.Listener.Addr().String() }

func (f *fakeServer) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	f.scrapes.Add(1)
	if f.fail.Load() {
		http.Error(w, "boom", http.StatusInternalServerError)
		return
	}
	q := f.queue.Load()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	switch f.engine {
	case datastore.EngineSGLang:
		fmt.Fprintf(
			w,
			"sglang:num_queue_reqs{model_name=\"m\"} %d\nsglang:num_running_reqs{model_name=\"m\"} 2\nsglang:token_usage{model_name=\"m\"} 0.5\n",
			q,
		)
	case datastore.EngineTRTLLM:
		fmt.Fprintf(w, "trtllm_num_requests_waiting %d\ntrtllm_num_requests_running 3\ntrtllm_kv_cache_utilization 0.25\n", q)
	default:
		fmt.Fprint(w, vllmPage(q))
	}
}

func vllmPage(queue int64) string {
	return fmt.Sprintf(`# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="llama"} %d.0
vllm:num_requests_running{engine="0",model_name="llama"} 1.0
vllm:kv_cache_usage_perc{engine="0",model_name="llama"} 0.1
vllm:cache_config_info{block_size="16",num_gpu_blocks="1000"} 1.0
vllm:lora_requests_info{max_lora="2",running_lora_adapters="sql",waiting_lora_adapters=""} 1.7e+09
`, queue)
}

const vllmModels = `{"object":"list","data":[
 {"id":"llama","object":"model","root":"/models/llama","parent":null},
 {"id":"sql","object":"model","root":"/adapters/sql","parent":"llama"}]}`
