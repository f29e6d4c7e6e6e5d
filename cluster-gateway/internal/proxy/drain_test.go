package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

// TestDrainKeepsListenerOpen checks what a new client sees while a stream drains: the listener
// stays open and answers 503 with Retry-After and Connection: close (not a refused or reset
// connection), and Serve returns once the stream has finished.
func TestDrainKeepsListenerOpen(t *testing.T) {
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
	url := "http://" + ln.Addr().String() + "/v1/completions"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, ln) }()
	resp := post(t, url, `{"model":"llama","prompt":"x","stream":true}`, nil)
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var got *http.Response
	poll.Until(t, waitTimeout, func() bool {
		r, err := client.Post(url, "application/json", strings.NewReader(`{"model":"unknown"}`))
		if err != nil {
			t.Fatalf("new request while a stream drains: %v; want 503 on the open listener", err)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
		got = r
		return r.StatusCode == http.StatusServiceUnavailable
	}, "a 503 from the draining listener")
	if got.Header.Get("Retry-After") == "" || !got.Close {
		t.Errorf(
			"503 while draining: Retry-After %q, Connection: close %v; want both",
			got.Header.Get("Retry-After"),
			got.Close,
		)
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned while a stream was running: %v", err)
	default:
	}
	close(release)
	rest, _ := io.ReadAll(rd)
	if !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("stream cut during shutdown: %q", rest)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the last stream ended")
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("listener still open after Serve returned")
	}
}
