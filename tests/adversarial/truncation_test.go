package adversarial

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// Ways cutPod breaks an answer, chosen by the request's prompt.
const (
	cutContentLength = "cut-content-length" // JSON declaring more bytes than it sends
	cutChunked       = "cut-chunked"        // chunked JSON without its last chunk
	cutStream        = "cut-stream"         // an event stream broken after its first event
	wholeAnswer      = "whole"              // a complete answer
)

// cutPod is a model server in the test process that looks like vLLM to the gateway (its
// /v1/models and the /metrics families the gateway scrapes) and dies in the middle of its
// completions: it answers their head and closes the connection.
func cutPod(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","root":%[1]q,"parent":null}]}`, harness.TestModel)
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name=%[1]q} 0
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name=%[1]q} 0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name=%[1]q} 0.1
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",num_gpu_blocks="10000"} 1
`, harness.TestModel)
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Prompt string `json:"prompt"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		head := `{"id":"cmpl-1","object":"text_completion","model":"` + harness.TestModel + `","choices":[{"index":0,"text":"the answer is`
		switch req.Prompt {
		case wholeAnswer:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, head+` 42"}],"usage":{"prompt_tokens":1,"completion_tokens":4}}`)
			return
		case cutContentLength:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(head)+200))
			fmt.Fprint(w, head)
		case cutChunked:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, head)
		case cutStream:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"the\"}]}\n\n")
		}
		w.(http.Flusher).Flush()
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close() // the pod dies mid-answer
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// truncationClients read the answers over HTTP/1.1 and over cleartext HTTP/2 (prior knowledge).
func truncationClients() map[string]*http.Client {
	h2 := &http.Transport{Protocols: new(http.Protocols)}
	h2.Protocols.SetUnencryptedHTTP2(true)
	return map[string]*http.Client{"http1": {Transport: &http.Transport{}, Timeout: time.Minute},
		"h2c": {Transport: h2, Timeout: time.Minute}}
}

// A pod that dies mid-answer (its body short of its Content-Length, chunked without the last
// chunk, or its event stream broken) must not hand the client a partial answer that looks
// whole: through the gateway, and through a router in front of it, over HTTP/1.1 and h2c, the
// client's read of the body fails. Each tier counts the truncation, and both keep serving.
func TestTruncatedUpstreamReachesTheClientAsAnError(t *testing.T) {
	w := newWorld(t)
	pod := cutPod(t)
	gw := w.Gateway("adv-cut", "us-east-1", []string{"cut-pod=" + pod})
	poll.Until(t, time.Minute, func() bool {
		return strings.Contains(truncGetBody("http://"+gw.Listen+"/v1/models"), harness.TestModel) &&
			truncGetStatus("http://"+gw.Metrics+"/readyz") == http.StatusOK
	}, "the gateway to serve the fake pod's model")
	rt := w.Router("us-east-1", "")
	poll.Until(t, time.Minute, func() bool {
		return strings.Contains(truncGetBody("http://"+rt.Listen+"/v1/models"), harness.TestModel)
	}, "the router to route the model")
	tiers := map[string]string{"gateway": gw.Listen, "router": rt.Listen}
	cuts := 0
	for tier, addr := range tiers {
		for proto, client := range truncationClients() {
			for _, cut := range []string{cutContentLength, cutChunked, cutStream} {
				t.Run(tier+"/"+proto+"/"+cut, func(t *testing.T) {
					cuts++
					body, err := truncComplete(client, addr, cut, cut == cutStream)
					switch {
					case err == nil:
						t.Fatalf("the truncated answer read as complete: %q", body)
					case proto == "http1" && !errors.Is(err, io.ErrUnexpectedEOF):
						t.Fatalf("read error %v, want io.ErrUnexpectedEOF", err)
					case proto == "h2c" && !strings.Contains(err.Error(), "stream error"):
						t.Fatalf("read error %v, want a reset stream", err)
					}
					if !strings.Contains(body, "the") {
						t.Errorf("the part that arrived was not passed on: %q", body)
					}
				})
				// Everyone else is still served, on the same client's connections too.
				if body, err := truncComplete(client, addr, wholeAnswer, false); err != nil || !strings.Contains(body, "42") {
					t.Fatalf("%s over %s after a truncation: %q, %v", tier, proto, body, err)
				}
			}
		}
	}
	// Every cut passed through the gateway; the router's six went through the router too.
	poll.Until(t, time.Minute, func() bool {
		return truncSumMetric(
			"http://"+gw.Metrics+"/metrics",
			"switchyard_gateway_upstream_truncated_total",
		) == float64(
			cuts,
		) &&
			truncSumMetric("http://"+rt.Metrics+"/metrics", "switchyard_router_upstream_truncated_total") == float64(cuts/2)
	}, "the truncations counted")
}

// complete posts a completion with prompt to addr over client and reads the whole answer,
// returning what arrived and the read's error.
func truncComplete(client *http.Client, addr, prompt string, stream bool) (string, error) {
	body := fmt.Sprintf(`{"model":%q,"prompt":%q,"max_tokens":4,"stream":%v}`, harness.TestModel, prompt, stream)
	resp, err := client.Post("http://"+addr+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return string(b), err
}

func truncGetBody(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func truncGetStatus(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// truncSumMetric adds up every sample of the family name on a Prometheus text page (-1 when the page
// cannot be read).
func truncSumMetric(url, name string) float64 {
	resp, err := http.Get(url)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	total := 0.0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			total += v
		}
	}
	return total
}
