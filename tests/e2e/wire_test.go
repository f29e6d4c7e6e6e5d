package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

// Wire-level helpers for the hostile-input and shutdown scenarios: raw TCP exchanges, OpenAI
// calls, Connect admin calls and gRPC calls over h2c, all with the standard library only.

// serverReadHeaderTimeout mirrors the ReadHeaderTimeout every Switchyard HTTP server sets (the
// gateway's proxy and metrics servers, the router's three servers).
const serverReadHeaderTimeout = 10 * time.Second

// closeBound is how long a server may take to close a connection it must refuse: the header
// timeout twice over plus slack, for a loaded machine.
const closeBound = 2*serverReadHeaderTimeout + 5*time.Second

// apiError is an OpenAI-style error body.
type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// answer is an HTTP response read to the end.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

func (a answer) String() string {
	b := a.Body
	if len(b) > 300 {
		b = b[:300]
	}
	return sprintf("%d %s", a.Status, b)
}

var testClient = &http.Client{Timeout: 60 * time.Second}

// send performs req and reads the whole answer.
func send(t *testing.T, req *http.Request) answer {
	t.Helper()
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", req.Method, req.URL, err)
	}
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// postJSON posts body to url with the given extra headers.
func postJSON(t *testing.T, url string, body io.Reader, hdr map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return send(t, req)
}

// wantAPIError checks an OpenAI-style error answer: its status, and its param and code when
// given ("" = any).
func wantAPIError(t *testing.T, a answer, status int, param, code string) apiError {
	t.Helper()
	var e apiError
	if a.Status != status {
		t.Fatalf("answer %s, want status %d", a, status)
	}
	if err := json.Unmarshal(a.Body, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("answer %s is not an OpenAI-style error body (%v)", a, err)
	}
	if param != "" && (e.Error.Param == nil || *e.Error.Param != param) {
		t.Errorf("error param %v, want %q: %s", e.Error.Param, param, a)
	}
	if code != "" && (e.Error.Code == nil || *e.Error.Code != code) {
		t.Errorf("error code %v, want %q: %s", e.Error.Code, code, a)
	}
	return e
}

// completionBody is a small non-streamed completion request.
func completionBody(maxTokens int) string {
	return sprintf(`{"model":%q,"prompt":"Say hello to the world","max_tokens":%d}`, testModel, maxTokens)
}

// servesCompletion returns a check that addr answers a normal completion with 200. It polls for
// up to 20 s, so a case that changed routing state has time to be undone.
func servesCompletion(addr string) func(t *testing.T) {
	return func(t *testing.T) {
		t.Helper()
		poll.UntilState(t, 20*time.Second, func() (bool, string) {
			resp, err := testClient.Post(
				"http://"+addr+"/v1/completions",
				"application/json",
				strings.NewReader(completionBody(4)),
			)
			if err != nil {
				return false, err.Error()
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK &&
					bytes.Contains(b, []byte(`"choices"`)), sprintf(
					"%d %s",
					resp.StatusCode,
					b,
				)
		}, addr+" to serve a normal completion")
	}
}

// servesMetrics returns a check that addr answers GET /metrics with the Go runtime metrics.
func servesMetrics(addr string) func(t *testing.T) {
	return func(t *testing.T) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
		if a := send(t, req); a.Status != http.StatusOK || !bytes.Contains(a.Body, []byte("go_goroutines")) {
			t.Fatalf("%s/metrics no longer serves: %d", addr, a.Status)
		}
	}
}

// rawExchange writes payload on a new connection to addr and returns what the server sent
// before it closed the connection. It fails the test when the server keeps the connection open
// longer than within.
func rawExchange(t *testing.T, addr string, payload []byte, within time.Duration) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	go func() { _, _ = conn.Write(payload) }() // the server may stop reading at any point
	_ = conn.SetReadDeadline(time.Now().Add(within))
	var got bytes.Buffer
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		if got.Len() < 4096 {
			got.Write(buf[:n])
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%s kept the connection open for %v after %q...", addr, within, firstLine(payload))
		}
		if err != nil { // EOF or reset: the server closed the connection
			return got.String()
		}
	}
}

// wantRefused checks a raw answer: nothing, or an HTTP 4xx status line (never a 5xx, never a
// success).
func wantRefused(t *testing.T, got string, statuses ...string) {
	t.Helper()
	if got == "" {
		return
	}
	for _, s := range statuses {
		if strings.HasPrefix(got, "HTTP/1.1 "+s) {
			return
		}
	}
	t.Errorf("answer %q, want the connection closed or HTTP %v", firstLine([]byte(got)), statuses)
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	if len(line) > 80 {
		line = line[:80]
	}
	return string(line)
}

// slowloris sends a request's header one byte per second and checks that the server closes the
// connection within closeBound (the header timeout, with slack) without answering 2xx or 5xx.
func slowloris(t *testing.T, addr, path string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	start := time.Now()
	closed := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(conn)
		closed <- string(b)
	}()
	if _, err := conn.Write([]byte("POST " + path + " HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	header := []byte("X-Slow: " + strings.Repeat("a", 200))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case got := <-closed:
			t.Logf("%s closed the slow connection after %v", addr, time.Since(start).Round(100*time.Millisecond))
			wantRefused(t, got, "408", "400")
			return
		case <-tick.C:
		}
		if time.Since(start) > closeBound {
			t.Fatalf(
				"%s kept a client sending one header byte per second for %v (header timeout %v)",
				addr,
				closeBound,
				serverReadHeaderTimeout,
			)
		}
		_, _ = conn.Write(header[i%len(header) : i%len(header)+1])
	}
}

// malformedRequests returns raw HTTP/1 requests that no server may accept: a header section far
// over any sane limit (one huge header, or very many small ones), bytes that are not HTTP, a
// malformed request line and a header line without a colon.
func malformedRequests(method, path string) map[string][]byte {
	huge := "X-Huge: " + strings.Repeat("h", 2<<20) + "\r\n"
	var many strings.Builder
	for i := range 100_000 {
		many.WriteString(sprintf("X-Flood-%d: v\r\n", i))
	}
	start := method + " " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
	return map[string][]byte{
		"one huge header":      []byte(start + huge + "\r\n"),
		"100,000 headers":      []byte(start + many.String() + "\r\n"),
		"garbage line":         []byte("\x16\x03\x01\x02\x00 not http at all\r\n\r\n"),
		"bad request line":     []byte("GET / HTTP/1.1 junk\r\nHost: x\r\n\r\n"),
		"header without colon": []byte(start + "NoColonHere\r\n\r\n"),
	}
}

// adminCall makes a Connect (JSON) unary call on a router's admin API and returns the HTTP status
// and, for errors, the Connect code and message.
func adminCall(t *testing.T, addr, method, auth, body string) (status int, code, message string) {
	t.Helper()
	req, _ := http.NewRequest(
		http.MethodPost,
		"http://"+addr+"/switchyard.admin.v1.AdminService/"+method,
		strings.NewReader(body),
	)
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	a := send(t, req)
	if a.Status == http.StatusOK {
		return a.Status, "", string(a.Body)
	}
	var e struct{ Code, Message string }
	_ = json.Unmarshal(a.Body, &e)
	return a.Status, e.Code, e.Message
}

// h2c is a client speaking HTTP/2 without TLS (prior knowledge), as gRPC clients do.
var h2c = func() *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}()

// grpcCall sends one length-prefixed message to a gRPC method over h2c and returns the
// grpc-status ("" when the server sent none) and the response body.
func grpcCall(t *testing.T, addr, method string, msg []byte, hdr http.Header) (string, []byte) {
	t.Helper()
	frame := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(frame[1:5], uint32(len(msg)))
	copy(frame[5:], msg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+method, bytes.NewReader(frame))
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	resp, err := h2c.Do(req)
	if err != nil {
		t.Fatalf("gRPC %s on %s: %v", method, addr, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	st := resp.Header.Get("Grpc-Status")
	if st == "" {
		st = resp.Trailer.Get("Grpc-Status")
	}
	return st, body
}

// servesGRPCHealth returns a check that addr's gRPC health service reports SERVING.
func servesGRPCHealth(addr string) func(t *testing.T) {
	return func(t *testing.T) {
		t.Helper()
		st, body := grpcCall(t, addr, "/grpc.health.v1.Health/Check", nil, nil)
		// HealthCheckResponse{status: SERVING} is field 1, varint 1.
		if st != "0" || !bytes.HasSuffix(body, []byte{0x08, 0x01}) {
			t.Fatalf("gRPC health on %s: status %q, body %x; want SERVING", addr, st, body)
		}
	}
}

// decoy is a TCP listener that counts the connections made to it: a destination a hostile
// client names in a routing header, which nothing may ever dial.
type decoy struct {
	ln    net.Listener
	dials atomic.Int64
}

func newDecoy(t *testing.T) *decoy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &decoy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d.dials.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return d
}

func (d *decoy) Addr() string { return d.ln.Addr().String() }

// ioMulti joins parts into a reader of unknown length (so a request body is sent chunked).
func ioMulti(parts ...string) io.Reader {
	rs := make([]io.Reader, len(parts))
	for i, p := range parts {
		rs[i] = strings.NewReader(p)
	}
	return io.MultiReader(rs...)
}

// dialRaw opens a TCP connection to addr, closed when the test ends.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
