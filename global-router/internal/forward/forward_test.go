package forward_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
)

// gateway starts an h2c-capable HTTP server on loopback running h.
func gateway(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

type recorder struct {
	mu  sync.Mutex
	out []forward.Outcome
}

func (r *recorder) Observe(o forward.Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out = append(r.out, o)
}

// router serves Forward over the given targets on a real loopback server (HTTP/1.1 and h2c)
// and returns its URL. Like the front door, it aborts an answer that broke after it started.
func router(t *testing.T, f *forward.Forwarder, targets []forward.Target) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		err := f.Forward(w, r, body, targets, nil)
		switch {
		case errors.Is(err, forward.ErrTruncated):
			panic(http.ErrAbortHandler)
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

func newForwarder(t *testing.T, rec *recorder) *forward.Forwarder {
	t.Helper()
	f, err := forward.New(forward.DefaultConfig(), rec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func TestRetriesRefusalsBeforeFirstByte(t *testing.T) {
	refuse503 := gateway(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	overflow := gateway(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Switchyard-Overflow", "1")
		w.WriteHeader(429)
	})
	ok := gateway(t, func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			t.Errorf("gateway got HTTP/%d, want HTTP/2 (h2c)", r.ProtoMajor)
		}
		w.Header().Set("X-Switchyard-Cluster", "c3")
		w.Header().Set("X-Switchyard-Region", "eu-west-1")
		fmt.Fprint(w, "hello")
	})
	dead := "http://" + closedAddr(t)
	rec := &recorder{}
	targets := []forward.Target{
		{Cluster: "c0", Region: "us-east-1", URL: dead, Route: "local"},
		{Cluster: "c1", Region: "us-east-1", URL: refuse503, Route: "local"},
		{Cluster: "c2", Region: "us-west-2", URL: overflow, Route: "overflow"},
		{Cluster: "c3", Region: "eu-west-1", URL: ok, Route: "overflow"},
	}
	cfg := forward.DefaultConfig()
	cfg.MaxAttempts = 4
	f, err := forward.New(cfg, rec)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(router(t, f, targets)+"/v1/completions", "application/json", strings.NewReader(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "hello" {
		t.Fatalf("status %d body %q", resp.StatusCode, b)
	}
	if got := resp.Header.Get("X-Switchyard-Route"); got != "retry" {
		t.Errorf("route = %q, want retry", got)
	}
	if got := resp.Header.Get("X-Switchyard-Cluster"); got != "c3" {
		t.Errorf("cluster = %q, want c3", got)
	}
	if len(rec.out) != 4 || !rec.out[0].Retried || rec.out[0].Err == nil || rec.out[1].Status != 503 ||
		rec.out[2].Status != 429 ||
		rec.out[3].Retried {
		t.Fatalf("outcomes = %+v", rec.out)
	}
}

func TestPlain429AndClientErrorsAreNotRetried(t *testing.T) {
	tests := []struct {
		name   string
		status int
	}{
		{"429 without overflow marker", 429},
		{"400", 400},
		{"404", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			first := gateway(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(tt.status) })
			second := gateway(t, func(w http.ResponseWriter, r *http.Request) { calls++ })
			rec := &recorder{}
			url := router(
				t,
				newForwarder(t, rec),
				[]forward.Target{{Cluster: "a", URL: first, Route: "local"}, {Cluster: "b", URL: second}},
			)
			resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status || calls != 0 {
				t.Fatalf("status %d (want %d), second cluster calls %d (want 0)", resp.StatusCode, tt.status, calls)
			}
			if resp.Header.Get("X-Switchyard-Route") != "local" {
				t.Fatalf("route header %q", resp.Header.Get("X-Switchyard-Route"))
			}
		})
	}
}

func TestExhaustedReturnsErrorAndWritesNothing(t *testing.T) {
	refuse := gateway(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	f := newForwarder(t, &recorder{})
	rw := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
	err := f.Forward(rw, r, []byte("{}"), []forward.Target{{Cluster: "a", URL: refuse}, {Cluster: "b", URL: refuse}}, nil)
	if !errors.Is(err, forward.ErrExhausted) {
		t.Fatalf("err = %v, want ErrExhausted", err)
	}
	if rw.Body.Len() != 0 || len(rw.Header()) != 0 {
		t.Fatalf("something was written: %v %q", rw.Header(), rw.Body.String())
	}
}

// TestStreamsWithoutBuffering checks that each SSE event reaches the client before the gateway
// sends the next one.
func TestStreamsWithoutBuffering(t *testing.T) {
	next := make(chan struct{})
	gw := gateway(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: {\"n\":%d}\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-next:
			case <-time.After(10 * time.Second):
				return
			}
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	url := router(t, newForwarder(t, &recorder{}), []forward.Target{{Cluster: "a", URL: gw, Route: "local"}})
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("data: {\"n\":%d}\n", i); line != want {
			t.Fatalf("event %d = %q, want %q", i, line, want)
		}
		_, _ = br.ReadString('\n')
		next <- struct{}{} // the gateway sends the next event only now
	}
}

func TestClientCancelReachesGateway(t *testing.T) {
	cancelled := make(chan struct{})
	gw := gateway(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(cancelled)
	})
	url := router(t, newForwarder(t, &recorder{}), []forward.Target{{Cluster: "a", URL: gw}})
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // the client goes away mid-stream
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("gateway request was not cancelled after the client left")
	}
}

func TestRoutingHeadersStripped(t *testing.T) {
	got := make(chan http.Header, 1)
	gw := gateway(t, func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() })
	url := router(t, newForwarder(t, &recorder{}), []forward.Target{{Cluster: "a", URL: gw}})
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/completions", strings.NewReader("{}"))
	req.Header.Set("X-Gateway-Destination-Endpoint", "10.0.0.1:8000")
	req.Header.Set("X-Switchyard-Route", "local")
	req.Header.Set("X-Prefiller-Host-Port", "169.254.169.254:80")
	req.Header.Set("X-Llm-D-Prefiller-Host-Port", "169.254.169.254:80")
	req.Header.Set("X-Data-Parallel-Host-Port", "169.254.169.254:80")
	req.Header.Set("X-Switchyard-Priority", "2")
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := <-got
	if h.Get("X-Gateway-Destination-Endpoint") != "" || h.Get("X-Switchyard-Route") != "" ||
		h.Get("X-Prefiller-Host-Port") != "" || h.Get("X-Llm-D-Prefiller-Host-Port") != "" ||
		h.Get("X-Data-Parallel-Host-Port") != "" {
		t.Fatalf("routing headers reached the gateway: %v", h)
	}
	if h.Get("X-Switchyard-Priority") != "2" || h.Get("Authorization") != "Bearer k" {
		t.Fatalf("client headers lost: %v", h)
	}
}

func TestDelayIsApplied(t *testing.T) {
	gw := gateway(t, func(w http.ResponseWriter, r *http.Request) {})
	rec := &recorder{}
	f := newForwarder(t, rec)
	r := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
	start := time.Now()
	if err := f.Forward(
		httptest.NewRecorder(),
		r,
		nil,
		[]forward.Target{{Cluster: "a", URL: gw, Delay: 50 * time.Millisecond}},
		nil,
	); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Fatalf("forward took %v, want at least the 50ms delay", el)
	}
}

func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestBrokenStreamEndsWithErrorEvent(t *testing.T) {
	for _, tc := range []struct{ name, sent string }{
		{"between events", "data: {\"n\":0}\n\n"},
		{"inside an event", "data: {\"n\":0}\n\ndata: {\"n\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := gateway(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, tc.sent)
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler) // the gateway dies mid-stream: the stream is reset

			})
			url := router(t, newForwarder(t, &recorder{}), []forward.Target{{Cluster: "a", URL: gw, Route: "local"}})
			resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"stream":true}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			events := strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n")
			last := events[len(events)-1]
			if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "data: {\"n\":0}") ||
				!strings.HasPrefix(last, `data: {"error":`) || !strings.Contains(last, "cluster a") {
				t.Fatalf("status %d, stream %q: want the events sent, then an error event", resp.StatusCode, body)
			}
		})
	}
}

// blackhole accepts TCP connections and reads them without ever answering, as a gateway behind a
// network partition looks from the router.
func blackhole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	return l.Addr().String()
}

func TestSilentGatewayIsAbandonedByPing(t *testing.T) {
	ok := gateway(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") })
	rec := &recorder{}
	cfg := forward.DefaultConfig()
	cfg.PingInterval, cfg.PingTimeout = 200*time.Millisecond, 200*time.Millisecond
	f, err := forward.New(cfg, rec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	url := router(t, f, []forward.Target{
		{Cluster: "cut", URL: "http://" + blackhole(t), Route: "overflow"},
		{Cluster: "ok", URL: ok, Route: "overflow"},
	})
	start := time.Now()
	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if resp.StatusCode != 200 || string(body) != "hello" || resp.Header.Get(contract.HeaderRoute) != "retry" {
		t.Fatalf(
			"status %d, route %q, body %q: want the retry's answer",
			resp.StatusCode,
			resp.Header.Get(contract.HeaderRoute),
			body,
		)
	}
	// The default HeaderTimeout is minutes: only the ping can end the first attempt this soon.
	if took > 10*time.Second {
		t.Errorf("took %s to give up on the silent gateway", took)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.out) == 0 || rec.out[0].Target.Cluster != "cut" || rec.out[0].Err == nil || !rec.out[0].Retried {
		t.Errorf("outcomes %+v: want the silent gateway's attempt first, failed and retried", rec.out)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*forward.Config)
		ok   bool
	}{
		{"defaults", func(*forward.Config) {}, true},
		{"no attempts", func(c *forward.Config) { c.MaxAttempts = 0 }, false},
		{"no dial timeout", func(c *forward.Config) { c.DialTimeout = 0 }, false},
		{"no header timeout", func(c *forward.Config) { c.HeaderTimeout = 0 }, false},
		{"no ping interval", func(c *forward.Config) { c.PingInterval = 0 }, false},
		{"no ping timeout", func(c *forward.Config) { c.PingTimeout = -time.Second }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := forward.DefaultConfig()
			tt.edit(&c)
			if err := c.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// With a Retarget, a refused attempt is followed by the targets chosen again, not the rest of
// the first list: again sees the URLs tried so far, and targets it returns that were tried are
// not tried twice. Without one, the list is followed as given.
func TestRetriesAreChosenAgain(t *testing.T) {
	answer := func(name string) string {
		return gateway(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Switchyard-Cluster", name)
			fmt.Fprint(w, name)
		})
	}
	dead := "http://" + closedAddr(t)
	first, second := answer("first-fallback"), answer("chosen-again")
	targets := []forward.Target{
		{Cluster: "cut", Region: "us-west-2", URL: dead, Route: "overflow"},
		{Cluster: "first-fallback", Region: "eu-west-1", URL: first, Route: "overflow"},
	}
	var calls [][]string
	again := func(tried []string) []forward.Target {
		calls = append(calls, tried)
		return []forward.Target{
			{Cluster: "cut", Region: "us-west-2", URL: dead, Route: "overflow"}, // tried: skipped
			{Cluster: "chosen-again", Region: "eu-west-1", URL: second, Route: "overflow"},
		}
	}
	for _, tc := range []struct {
		name  string
		again forward.Retarget
		want  string
	}{
		{"chosen again", again, "chosen-again"},
		{"no retarget", nil, "first-fallback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls = nil
			rec := &recorder{}
			f := newForwarder(t, rec)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if err := f.Forward(w, r, body, targets, tc.again); err != nil {
					http.Error(w, err.Error(), http.StatusServiceUnavailable)
				}
			}))
			defer srv.Close()
			resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m"}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(b) != tc.want {
				t.Fatalf("status %d body %q, want %q", resp.StatusCode, b, tc.want)
			}
			if got := resp.Header.Get("X-Switchyard-Route"); got != "retry" {
				t.Errorf("route = %q, want retry", got)
			}
			if len(rec.out) != 2 || rec.out[0].Err == nil {
				t.Fatalf("outcomes = %+v, want the cut attempt then one answer", rec.out)
			}
			if tc.again != nil && (len(calls) != 1 || len(calls[0]) != 1 || calls[0][0] != dead) {
				t.Fatalf("again called with %v, want once with the cut URL", calls)
			}
		})
	}
}

// Retries chosen again stop at the retry budget, and when again has nowhere to go.
func TestRetargetBudget(t *testing.T) {
	dead := "http://" + closedAddr(t)
	refuse := gateway(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	for _, tc := range []struct {
		name     string
		again    func(n *int) forward.Retarget
		attempts int
	}{
		{"budget", func(n *int) forward.Retarget {
			return func([]string) []forward.Target {
				*n++
				return []forward.Target{{Cluster: fmt.Sprint("c", *n), URL: refuse + "/" + fmt.Sprint(*n)}}
			}
		}, 3},
		{"nowhere else", func(n *int) forward.Retarget {
			return func([]string) []forward.Target { *n++; return nil }
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			f := newForwarder(t, rec) // MaxAttempts 3
			n := 0
			again := tc.again(&n)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				err := f.Forward(w, r, body, []forward.Target{{Cluster: "c0", URL: dead}}, again)
				if !errors.Is(err, forward.ErrExhausted) {
					t.Errorf("err = %v, want ErrExhausted", err)
				}
				w.WriteHeader(http.StatusServiceUnavailable)
			}))
			defer srv.Close()
			resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if len(rec.out) != tc.attempts {
				t.Fatalf("%d attempts, want %d: %+v", len(rec.out), tc.attempts, rec.out)
			}
		})
	}
}
