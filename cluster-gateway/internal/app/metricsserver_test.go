package app

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// serveLimited serves h within l on a loopback port until the test ends and returns its address.
func serveLimited(t *testing.T, h http.Handler, l metricsLimits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newMetricsServer(h, l)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestMetricsServerLimits: a header flood gets 431, and a client that trickles its headers or
// idles on a kept-alive connection is disconnected, while a plain scrape is served.
func TestMetricsServerLimits(t *testing.T) {
	l := defaultMetricsLimits()
	l.ReadHeaderTimeout, l.IdleTimeout = 300*time.Millisecond, 300*time.Millisecond
	addr := serveLimited(
		t,
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }),
		l,
	)
	t.Run("header sizes", func(t *testing.T) {
		for _, tt := range []struct {
			size, want int
		}{{8 << 10, http.StatusOK}, {64 << 10, http.StatusRequestHeaderFieldsTooLarge}} {
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
			req.Header.Set("X-Flood", strings.Repeat("a", tt.size))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("%d-byte header: status %d, want %d", tt.size, resp.StatusCode, tt.want)
			}
		}
	})
	for _, tt := range []struct{ name, write string }{
		{"headers never finished", "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "},
		{"idle after a request", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tt.write); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.Copy(io.Discard, conn); errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("connection still open 10 s after the limit")
			}
		})
	}
}
