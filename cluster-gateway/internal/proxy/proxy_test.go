package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/proxy"
	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/poll"
)

const chatBody = `{"model":"llama","stream":true,"messages":[{"role":"user","content":"hello"}]}`

func TestStreamingPassThrough(t *testing.T) {
	release := make(chan struct{})
	var gotHeader http.Header
	up := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		gotHeader = r.Header.Clone()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
		w.(http.Flusher).Flush()
		<-release // the client must see the first chunk before the upstream finishes
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n")
		fmt.Fprint(
			w,
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":3}}}\n\ndata: [DONE]\n\n",
		)
	})
	e := newEnv(t, nil, up)
	resp := post(t, e.url+"/v1/chat/completions", chatBody, map[string]string{
		"X-Gateway-Destination-Endpoint": "10.9.9.9:1", "X-Switchyard-Route": "x", "X-Gateway-Model-Name": "evil",
		"X-Switchyard-Tenant": "team-a", "Authorization": "Bearer k",
	})
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	first, err := rd.ReadString('\n')
	if err != nil || !strings.Contains(first, `"a"`) {
		t.Fatalf("first line %q, %v", first, err)
	}
	close(release)
	rest, _ := io.ReadAll(rd)
	if !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("rest = %q", rest)
	}
	for k, want := range map[string]string{contract.HeaderCluster: "c1", contract.HeaderRegion: "us-east-1", contract.HeaderEndpoint: datastore.OpaqueName(up), "Content-Type": "text/event-stream"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("response %s = %q, want %q", k, got, want)
		}
	}
	for k, want := range map[string]string{"X-Gateway-Destination-Endpoint": "", "X-Switchyard-Route": "", "X-Switchyard-Tenant": "",
		"X-Gateway-Model-Name": "llama", "X-Gateway-Base-Model-Name": "llama", "Authorization": "Bearer k"} {
		if got := gotHeader.Get(k); got != want {
			t.Errorf("upstream %s = %q, want %q", k, got, want)
		}
	}
	if req := e.sched.seen[0]; req.Tenant != "team-a" || req.Headers["x-gateway-destination-endpoint"] != "" {
		t.Errorf("scheduled request = %+v", req)
	}
	poll.Until(t, waitTimeout, func() bool { return len(e.hooks.posts()) == 1 }, "post-response hook")
	info := e.hooks.posts()[0]
	if info.Status != 200 || info.OutputTokens != 2 || info.CachedTokens != 3 || info.PromptTokens != 5 ||
		info.TTFT <= 0 ||
		info.MeanITL <= 0 {
		t.Fatalf("response info = %+v", info)
	}
	if n := e.store.Get(up).InFlight(); n != 0 {
		t.Fatalf("in-flight = %d after the stream ended", n)
	}
}

func TestRetryBeforeFirstByte(t *testing.T) {
	var busyHits atomic.Int32
	busy := upstream(t, func(w http.ResponseWriter, _ *http.Request) {
		busyHits.Add(1)
		http.Error(w, "busy", http.StatusServiceUnavailable)
	})
	good := upstream(t, func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"choices":[{"text":"ok"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	})
	dead := deadAddr(t)
	e := newEnv(t, nil, dead, busy, good)
	resp := post(t, e.url+"/v1/completions", `{"model":"llama","prompt":"x"}`, nil)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(contract.HeaderEndpoint) != datastore.OpaqueName(good) ||
		!strings.Contains(string(body), "ok") {
		t.Fatalf("status %d endpoint %q body %s", resp.StatusCode, resp.Header.Get(contract.HeaderEndpoint), body)
	}
	if busyHits.Load() != 1 {
		t.Fatalf("busy endpoint hit %d times", busyHits.Load())
	}
	poll.Until(
		t,
		waitTimeout,
		func() bool { return sumCounter(t, e.reg, "switchyard_gateway_requests_total") == 1 },
		"request counted",
	)
	want := `
# HELP switchyard_gateway_requests_total Inference requests by model and final HTTP status code.
# TYPE switchyard_gateway_requests_total counter
switchyard_gateway_requests_total{code="200",model="llama"} 1
# HELP switchyard_gateway_retries_total Requests retried on another endpoint before the first response byte, by reason.
# TYPE switchyard_gateway_retries_total counter
switchyard_gateway_retries_total{reason="503"} 1
switchyard_gateway_retries_total{reason="connect"} 1
`
	if err := testutil.GatherAndCompare(
		e.reg,
		strings.NewReader(want),
		"switchyard_gateway_requests_total",
		"switchyard_gateway_retries_total",
	); err != nil {
		t.Fatal(err)
	}
}

func TestLastAttemptPassesStatusThrough(t *testing.T) {
	busy := upstream(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "7")
		http.Error(w, "busy", http.StatusTooManyRequests)
	})
	e := newEnv(t, func(c *proxy.Config) { c.MaxAttempts = 1 }, busy)
	resp := post(t, e.url+"/v1/completions", `{"model":"llama","prompt":"x"}`, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("status %d retry-after %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestNoRetryAfterFirstByte(t *testing.T) {
	for _, tc := range []struct{ name, sent string }{
		{"between events", "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"},
		{"inside an event", "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"cho"},
	} {
		t.Run(tc.name, func(t *testing.T) { testNoRetryAfterFirstByte(t, tc.sent) })
	}
}

func testNoRetryAfterFirstByte(t *testing.T, sent string) {
	var hits atomic.Int32
	broken := upstream(t, func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, sent)
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close() // the pod dies mid-stream
		}
	})
	spare := upstream(t, func(w http.ResponseWriter, _ *http.Request) { hits.Add(100) })
	e := newEnv(t, nil, broken, spare)
	resp := post(t, e.url+"/v1/completions", `{"model":"llama","prompt":"x","stream":true}`, nil)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"a"`) {
		t.Fatalf("status %d body %q", resp.StatusCode, body)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("reading the cut stream: %v, want io.ErrUnexpectedEOF (the answer aborted)", err)
	}
	// The client learns in the stream that the answer is cut: a last, complete error event.
	events := strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n")
	last := events[len(events)-1]
	if !strings.HasPrefix(last, `data: {"error":`) || !strings.Contains(last, "upstream_error") ||
		strings.Contains(string(body), "[DONE]") {
		t.Fatalf("stream does not end with an error event: %q", body)
	}
	poll.Until(t, waitTimeout, func() bool { return len(e.hooks.posts()) == 1 }, "post-response hook")
	if hits.Load() != 1 {
		t.Fatalf("upstream hits = %d, want exactly one attempt", hits.Load())
	}
	if info := e.hooks.posts()[0]; info.Err == nil {
		t.Fatalf("mid-stream failure not reported: %+v", info)
	}
}

// x-switchyard-endpoint names the pod that served the request, never its internal address,
// unless EndpointHeaderAddress asks for the address (debugging).
func TestEndpointHeaderValue(t *testing.T) {
	up := upstream(t, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "{}") })
	tests := []struct {
		name    string
		address bool
		want    string
	}{
		{"name by default", false, datastore.OpaqueName(up)},
		{"address for debugging", true, up},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *proxy.Config) { c.EndpointHeaderAddress = tt.address }, up)
			resp := post(t, e.url+"/v1/completions", `{"model":"llama","prompt":"x"}`, nil)
			resp.Body.Close()
			got := resp.Header.Get(contract.HeaderEndpoint)
			if resp.StatusCode != 200 || got != tt.want {
				t.Fatalf("status %d, endpoint header %q, want %q", resp.StatusCode, got, tt.want)
			}
			if !tt.address && strings.Contains(got, "127.0.0.1") {
				t.Fatalf("endpoint header %q shows the pod's address", got)
			}
		})
	}
}

func TestEndpointHeaderOff(t *testing.T) {
	up := upstream(t, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "{}") })
	e := newEnv(t, func(c *proxy.Config) { c.EndpointHeader = false }, up)
	resp := post(t, e.url+"/v1/embeddings", `{"model":"llama","input":"x"}`, nil)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(contract.HeaderEndpoint) != "" ||
		resp.Header.Get(contract.HeaderCluster) != "c1" {
		t.Fatalf("status %d headers %v", resp.StatusCode, resp.Header)
	}
}

func TestCancelPropagates(t *testing.T) {
	cancelled := make(chan struct{})
	up := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(cancelled)
	})
	e := newEnv(t, nil, up)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(
		ctx,
		http.MethodPost,
		e.url+"/v1/completions",
		strings.NewReader(`{"model":"llama","prompt":"x","stream":true}`),
	)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("upstream request was not cancelled")
	}
	poll.Until(t, waitTimeout, func() bool { return e.store.Get(up).InFlight() == 0 }, "in-flight back to zero")
}

func TestErrors(t *testing.T) {
	up := upstream(t, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "{}") })
	e := newEnv(t, nil, up)
	tests := []struct {
		name      string
		body      string
		hdr       map[string]string
		saturated bool
		status    int
		code      string
	}{
		{"malformed", `{"model":`, nil, false, 400, "invalid_request"},
		{"missing model", `{"prompt":"x"}`, nil, false, 400, "invalid_request"},
		{
			"bad priority",
			`{"model":"llama"}`,
			map[string]string{"X-Switchyard-Priority": "urgent"},
			false,
			400,
			"invalid_request",
		},
		{"unknown model", `{"model":"nope"}`, nil, false, 404, "model_not_found"},
		{
			"too large",
			`{"model":"llama","prompt":"` + strings.Repeat("x", 1<<17) + `"}`,
			nil,
			false,
			413,
			"request_too_large",
		},
		{"saturated", `{"model":"llama"}`, nil, true, 429, "overloaded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.sched.setSaturated(tt.saturated)
			resp := post(t, e.url+"/v1/completions", tt.body, tt.hdr)
			defer resp.Body.Close()
			var got struct {
				Error struct{ Code, Message, Type string } `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status || got.Error.Code != tt.code || got.Error.Message == "" {
				t.Fatalf("status %d error %+v", resp.StatusCode, got.Error)
			}
			if overflow := resp.Header.Get("X-Switchyard-Overflow") == "1"; overflow != (tt.status == 429) {
				t.Fatalf("overflow header = %v", overflow)
			}
			if tt.status == 429 && resp.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		})
	}
}

func TestModelsHealthReady(t *testing.T) {
	up := upstream(t, func(http.ResponseWriter, *http.Request) {})
	e := newEnv(t, nil, up)
	resp, err := http.Get(e.url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(
		body,
	) != `{"object":"list","data":[{"id":"llama","object":"model","created":0,"owned_by":"switchyard"},{"id":"lora-a","object":"model","created":0,"owned_by":"switchyard"}]}` {
		t.Fatalf("models = %s", body)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(e.url + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s = %d", p, resp.StatusCode)
		}
	}
	ep := e.store.Get(up)
	models := ep.Models()
	ep.SetModels(nil) // fresh metrics, but the model list is not known yet
	resp, _ = http.Get(e.url + "/readyz")
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz before the model list is known = %d", resp.StatusCode)
	}
	ep.SetModels(models)
	ep.SetMetrics(nil)
	resp, _ = http.Get(e.url + "/readyz")
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz without fresh metrics = %d", resp.StatusCode)
	}
}

func TestGracefulShutdownFinishesStreams(t *testing.T) {
	release := make(chan struct{})
	up := upstream(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	e := newEnv(t, nil, up)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, ln) }()
	resp := post(t, "http://"+ln.Addr().String()+"/v1/completions", `{"model":"llama","prompt":"x","stream":true}`, nil)
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	// A request arriving while draining is refused with 503 (before draining, this unknown
	// model would get 404).
	var rec *httptest.ResponseRecorder
	poll.Until(t, waitTimeout, func() bool {
		rec = httptest.NewRecorder()
		e.srv.Handler().
			ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(`{"model":"unknown"}`)))
		return rec.Code == http.StatusServiceUnavailable
	}, "draining")
	if rec.Header().Get("Retry-After") == "" {
		t.Fatal("503 while draining without Retry-After")
	}
	close(release)
	rest, _ := io.ReadAll(rd)
	if !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("stream cut during shutdown: %q", rest)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestQueuedRequestRunsWhenARequestFinishes(t *testing.T) {
	up := upstream(t, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"choices":[{"text":"ok"}]}`) })
	e := newEnvFlow(t, true, nil, up)
	e.sched.setSaturated(true)
	queued := make(chan *http.Response, 1)
	go func() {
		resp, err := http.Post(
			e.url+"/v1/completions",
			"application/json",
			strings.NewReader(`{"model":"llama","prompt":"x"}`),
		)
		if err == nil {
			resp.Body.Close()
		}
		queued <- resp
	}()
	poll.Until(t, waitTimeout, func() bool { return e.flow.Len() == 1 }, "request queued")
	e.sched.setSaturated(false)
	// A second request, placed at once now that capacity is back, finishes; its end wakes the queue
	// (the retry tick is an hour, so nothing else can).
	resp := post(t, e.url+"/v1/completions", `{"model":"llama","prompt":"y"}`, nil)
	resp.Body.Close()
	select {
	case r := <-queued:
		if r == nil || r.StatusCode != 200 {
			t.Fatalf("queued request answered %v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("queued request never ran")
	}
}

func TestCleartextHTTP2(t *testing.T) {
	up := upstream(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n")
	})
	e := newEnv(t, nil, up)
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: &protocols}}
	resp, err := client.Post(
		e.url+"/v1/completions",
		"application/json",
		strings.NewReader(`{"model":"llama","prompt":"x","stream":true}`),
	)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 || !strings.Contains(string(body), "[DONE]") {
		t.Fatalf("proto %s status %d body %q", resp.Proto, resp.StatusCode, body)
	}
}

// With queueing on and every pod saturated, a request a router offers to take elsewhere is not
// queued: it is handed back at once (429, x-switchyard-overflow: 1, Retry-After). A malformed
// offer is a 400 naming the header.
func TestHandBackInsteadOfQueueing(t *testing.T) {
	up := upstream(t, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"choices":[{"text":"ok"}]}`) })
	e := newEnvFlow(t, true, nil, up)
	e.sched.setSaturated(true)
	resp := post(
		t,
		e.url+"/v1/completions",
		`{"model":"llama","prompt":"x"}`,
		map[string]string{"X-Switchyard-Hand-Back-Ms": "900"},
	)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("X-Switchyard-Overflow") != "1" || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(body), "handed back") {
		t.Fatalf("offered request: status %d overflow %q retry-after %q body %s; want a 429 hand-back",
			resp.StatusCode, resp.Header.Get("X-Switchyard-Overflow"), resp.Header.Get("Retry-After"), body)
	}
	if n := e.flow.Len(); n != 0 {
		t.Fatalf("%d requests queued, want none", n)
	}
	resp = post(
		t,
		e.url+"/v1/completions",
		`{"model":"llama","prompt":"x"}`,
		map[string]string{"X-Switchyard-Hand-Back-Ms": "soon"},
	)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "x-switchyard-hand-back-ms") {
		t.Fatalf("malformed offer: status %d body %s; want 400 naming the header", resp.StatusCode, body)
	}
}
