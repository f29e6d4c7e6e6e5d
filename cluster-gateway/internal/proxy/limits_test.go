package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline/pipelinetest"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/proxy"
)

// rawRequest writes head (request line and headers, without the blank line) and body to a new
// connection to the gateway, body at one byte per gap, and returns the response status code.
func rawRequest(t *testing.T, url, head, body string, gap time.Duration) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	for i := range len(body) {
		if _, err := conn.Write([]byte{body[i]}); err != nil {
			break // the gateway gave up on the body and closed the connection
		}
		time.Sleep(gap)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("answer %d: %s", resp.StatusCode, b)
	return resp.StatusCode
}

func TestTrickledBodyIsRefused(t *testing.T) {
	up := upstream(t, func(w http.ResponseWriter, _ *http.Request) {
		t.Error("a request whose body never arrived reached a pod")
	})
	e := newEnv(t, func(c *proxy.Config) { c.BodyReadTimeout = 300 * time.Millisecond }, up)
	body := `{"model":"llama","prompt":"a slow client"}`
	head := fmt.Sprintf(
		"POST /v1/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: %d\r\n",
		len(body),
	)
	start := time.Now()
	if code := rawRequest(t, e.url, head, body, 100*time.Millisecond); code != http.StatusBadRequest {
		t.Fatalf("trickled body answered %d, want 400", code)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("trickled body held the request %s (BodyReadTimeout 300 ms)", took)
	}
	if n := pipelinetest.BodyRefused(t, e.reg, "http", "timeout"); n != 1 {
		t.Fatalf("slow bodies counted %v, want 1", n)
	}
}

func TestBodyDeadlineDoesNotBoundTheStream(t *testing.T) {
	up := upstream(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 4 {
			fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\"%d\"}]}\n\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(200 * time.Millisecond) // 800 ms of streaming, past the 300 ms body bound
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	e := newEnv(t, func(c *proxy.Config) { c.BodyReadTimeout = 300 * time.Millisecond }, up)
	resp := post(t, e.url+"/v1/completions", `{"model":"llama","prompt":"x","stream":true}`, nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "[DONE]") {
		t.Fatalf("status %d, stream %q: the body deadline cut the answer", resp.StatusCode, b)
	}
}

func TestHeaderFloodIs431(t *testing.T) {
	e := newEnv(t, nil, upstream(t, func(http.ResponseWriter, *http.Request) {}))
	req, _ := http.NewRequest(http.MethodPost, e.url+"/v1/completions", strings.NewReader(`{"model":"llama"}`))
	for i := range 200 {
		req.Header.Set(fmt.Sprintf("X-Flood-%d", i), strings.Repeat("a", 512)) // 100 KiB of headers
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("header flood answered %d, want 431", resp.StatusCode)
	}
	// The gateway still serves.
	resp = post(t, e.url+"/v1/models", ``, nil)
	resp.Body.Close()
}
