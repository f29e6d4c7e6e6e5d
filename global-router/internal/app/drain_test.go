package app

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

// TestServeDrains checks what clients see when serve's context ends while a request runs: new
// requests get 503 with Retry-After and Connection: close on the still open listener, the running
// request completes, and serve returns (closing the listener) once it has.
func TestServeDrains(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, _ *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "done")
	})
	mux.HandleFunc("/fast", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serve(ctx, addr, mux, slog.New(slog.DiscardHandler)) }()

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string) (*http.Response, string, error) {
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b), nil
	}
	poll.Until(
		t,
		waitTimeout,
		func() bool { r, _, err := get("/fast"); return err == nil && r.StatusCode == 200 },
		"the server to answer",
	)
	slow := make(chan string, 1)
	go func() {
		_, body, err := get("/slow")
		if err != nil {
			body = err.Error()
		}
		slow <- body
	}()
	<-started
	cancel()

	var resp *http.Response
	var refusal string
	poll.Until(t, waitTimeout, func() bool {
		r, body, err := get("/fast")
		if err != nil {
			t.Fatalf("new request while draining: %v; want 503 on the open listener", err)
		}
		resp, refusal = r, body
		return r.StatusCode == http.StatusServiceUnavailable
	}, "a 503 while draining")
	if resp.Header.Get("Retry-After") == "" || !resp.Close {
		t.Errorf(
			"503 while draining: Retry-After %q, Connection: close %v; want both",
			resp.Header.Get("Retry-After"),
			resp.Close,
		)
	}
	const wantBody = `{"error":{"message":"the router is shutting down; retry","type":"service_unavailable","param":null,"code":"shutting_down"}}` + "\n"
	if refusal != wantBody || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("503 while draining: body %q (%s), want %q", refusal, resp.Header.Get("Content-Type"), wantBody)
	}
	select {
	case err := <-served:
		t.Fatalf("serve returned while a request was running: %v", err)
	default:
	}
	close(release)
	if body := <-slow; body != "done" {
		t.Errorf("running request got %q, want it completed", body)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return after the last request ended")
	}
	if _, _, err := get("/fast"); err == nil {
		t.Error("listener still open after serve returned")
	}
}

// waitTimeout bounds every wait for a condition in these tests (poll.Until): generous, as a
// busy machine is slow.
const waitTimeout = 10 * time.Second
