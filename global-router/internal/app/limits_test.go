package app

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// startLimited serves h within l on a loopback port until the test ends and returns its address.
func startLimited(t *testing.T, h http.Handler, l httpLimits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(h, l)
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

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "reading request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
}

// closedWithin reports whether the server closes conn (the client reads EOF, perhaps after an
// error response) within d.
func closedWithin(t *testing.T, conn net.Conn, d time.Duration) bool {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, conn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	return true // EOF (nil from io.Copy) or a reset: the server closed the connection
}

// TestSlowClientsAreCutOff: a client that trickles its headers, or idles on a kept-alive
// connection, loses the connection after the limit; one that stays within it is served.
func TestSlowClientsAreCutOff(t *testing.T) {
	l := defaultHTTPLimits()
	l.ReadHeaderTimeout, l.IdleTimeout = 300*time.Millisecond, 300*time.Millisecond
	addr := startLimited(t, okHandler(), l)
	tests := []struct {
		name  string
		write string // sent at once, then nothing more
		want  string // first response line expected before the close, "" for none
	}{
		{"headers never finished", "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Slow: ", ""},
		{"idle after a request", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tt.write); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			if tt.want != "" {
				_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				line, err := br.ReadString('\n')
				if err != nil || strings.TrimSpace(line) != tt.want {
					t.Fatalf("status line %q, %v; want %q", line, err, tt.want)
				}
			}
			if !closedWithin(t, &bufConn{Conn: conn, r: br}, 10*time.Second) {
				t.Fatal("connection still open 10 s after the limit")
			}
		})
	}
}

type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// TestHeaderFloodGets431: a header block beyond MaxHeaderBytes is refused with 431, one within it
// is served.
func TestHeaderFloodGets431(t *testing.T) {
	addr := startLimited(t, okHandler(), defaultHTTPLimits())
	tests := []struct {
		name   string
		header int
		want   int
	}{
		{"within the limit", 32 << 10, http.StatusOK},
		{"flood", 128 << 10, http.StatusRequestHeaderFieldsTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Flood", strings.Repeat("a", tt.header))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

// TestH2CAdvertisesLimits: an h2c client is told the stream and header-list limits in the
// server's first SETTINGS frame.
func TestH2CAdvertisesLimits(t *testing.T) {
	l := defaultHTTPLimits()
	addr := startLimited(t, okHandler(), l)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	// Client preface, then an empty SETTINGS frame (length 0, type 4, no flags, stream 0).
	if _, err := io.WriteString(conn, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"); err != nil {
		t.Fatal(err)
	}
	settings, err := readSettings(conn)
	if err != nil {
		t.Fatal(err)
	}
	const maxConcurrentStreams, maxHeaderListSize = 0x3, 0x6
	if got := settings[maxConcurrentStreams]; got != uint32(l.MaxConcurrentStreams) {
		t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS = %d, want %d", got, l.MaxConcurrentStreams)
	}
	if got := settings[maxHeaderListSize]; got < uint32(l.MaxHeaderBytes) || got > uint32(2*l.MaxHeaderBytes) {
		t.Errorf("SETTINGS_MAX_HEADER_LIST_SIZE = %d, want about %d", got, l.MaxHeaderBytes)
	}
}

// readSettings reads the server's first frame, which must be SETTINGS, into id -> value.
func readSettings(r io.Reader) (map[uint16]uint32, error) {
	var hdr [9]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
	if hdr[3] != 0x4 || n%6 != 0 {
		return nil, fmt.Errorf("first frame type %d length %d, want SETTINGS", hdr[3], n)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return nil, err
	}
	out := map[uint16]uint32{}
	for i := 0; i < n; i += 6 {
		out[binary.BigEndian.Uint16(payload[i:])] = binary.BigEndian.Uint32(payload[i+2:])
	}
	return out, nil
}

// TestBodyDeadline: a body that does not arrive in time fails the handler's read; one that does
// is served, and the response may then stream past the deadline.
func TestBodyDeadline(t *testing.T) {
	const deadline = 300 * time.Millisecond
	streaming := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "reading request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		rc := http.NewResponseController(w)
		for i := range 3 { // the stream outlives the body deadline
			fmt.Fprintf(w, "data: %d\n\n", i)
			_ = rc.Flush()
			select {
			case <-time.After(deadline):
			case <-r.Context().Done():
				return
			}
		}
	})
	addr := startLimited(t, withBodyDeadline(streaming, deadline), defaultHTTPLimits())
	t.Run("trickled body", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// 100 bytes announced, 10 sent, then nothing.
		if _, err := io.WriteString(
			conn,
			"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"model\":",
		); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer within 10 s: %v", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d, want 400 from the failed read", resp.StatusCode)
		}
	})
	t.Run("whole body then a long stream", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(
			ctx,
			http.MethodPost,
			"http://"+addr+"/v1/completions",
			strings.NewReader(`{"model":"m"}`),
		)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK || strings.Count(string(body), "data: ") != 3 {
			t.Fatalf("status %d, body %q, err %v: want the whole 3-event stream", resp.StatusCode, body, err)
		}
	})
}

// TestMetricsPortBoundsTheWholeRequest: on the metrics port a request whose body trickles past
// ReadTimeout is cut off, and an answer not written within WriteTimeout is dropped with its
// connection, so a slow scraper cannot hold the port; the streaming ports have neither bound.
func TestMetricsPortBoundsTheWholeRequest(t *testing.T) {
	if l := defaultHTTPLimits(); l.ReadTimeout != 0 || l.WriteTimeout != 0 {
		t.Fatalf("streaming ports bounded: read %v write %v", l.ReadTimeout, l.WriteTimeout)
	}
	if l := metricsHTTPLimits(); l.ReadTimeout <= 0 || l.WriteTimeout <= 0 {
		t.Fatalf("metrics port unbounded: read %v write %v", l.ReadTimeout, l.WriteTimeout)
	}
	l := metricsHTTPLimits()
	l.ReadTimeout, l.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(time.Second)
		}
		okHandler().ServeHTTP(w, r)
	})
	addr := startLimited(t, slow, l)
	for _, tc := range []struct{ name, write string }{
		{"trickled body", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc"},
		{"slow answer", "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tc.write); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(conn)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("connection still open 10 s after the limit (read %q)", got)
			}
			if strings.Contains(string(got), "200 OK") {
				t.Fatalf("answered 200 past the limit: %q", got)
			}
		})
	}
}
