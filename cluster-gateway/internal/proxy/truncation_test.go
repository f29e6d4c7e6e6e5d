package proxy_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

// cutUpstream returns a model server that answers the head of a body, then closes its
// connection: kind "content-length" declares more bytes than it sends, "chunked" never sends the
// last chunk, "sse" breaks an event stream after its first event.
func cutUpstream(t testing.TB, kind string) string {
	t.Helper()
	return upstream(t, func(w http.ResponseWriter, _ *http.Request) {
		switch kind {
		case "content-length":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "400")
			fmt.Fprint(w, `{"id":"cmpl-1","choices":[{"text":"hel`)
		case "chunked":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"cmpl-1","choices":[{"text":"hel`)
		case "sse":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
		}
		w.(http.Flusher).Flush()
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close() // the pod dies mid-answer
		}
	})
}

// clients over which the gateway's answers are read: HTTP/1.1, and cleartext HTTP/2 (prior
// knowledge), as a global router speaks to it.
func clients() map[string]*http.Client {
	h1 := &http.Transport{}
	h2 := &http.Transport{Protocols: new(http.Protocols)}
	h2.Protocols.SetUnencryptedHTTP2(true)
	return map[string]*http.Client{"http1": {Transport: h1}, "h2c": {Transport: h2}}
}

// checkAborted fails t unless err is how a client sees an aborted answer: an unexpected EOF
// over HTTP/1.1, a reset stream over HTTP/2.
func checkAborted(t testing.TB, proto string, body []byte, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Fatalf("the truncated answer read as complete: %q", body)
	case proto == "http1" && !errors.Is(err, io.ErrUnexpectedEOF):
		t.Fatalf("read error %v, want io.ErrUnexpectedEOF", err)
	case proto == "h2c" && !strings.Contains(err.Error(), "stream error"):
		t.Fatalf("read error %v, want a reset stream", err)
	}
}

// A model server's body cut short after the headers were sent (short of its Content-Length,
// without its last chunk, or an event stream broken) reaches the client as a failed read, never
// as a clean end, over HTTP/1.1 and h2c; the answer is counted, and the gateway keeps serving.
func TestTruncatedUpstreamAbortsTheAnswer(t *testing.T) {
	for _, kind := range []string{"content-length", "chunked", "sse"} {
		for proto, client := range clients() {
			t.Run(kind+"/"+proto, func(t *testing.T) {
				cut := cutUpstream(t, kind)
				whole := upstream(t, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"ok":true}`) })
				e := newEnv(t, nil, cut, whole)
				stream := kind == "sse"
				resp, err := client.Post(e.url+"/v1/completions", "application/json",
					strings.NewReader(fmt.Sprintf(`{"model":"llama","prompt":"x","stream":%v}`, stream)))
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d, want the pod's 200 (its headers were sent)", resp.StatusCode)
				}
				checkAborted(t, proto, body, err)
				if stream && !strings.Contains(string(body), `"upstream_error"`) {
					t.Errorf("the broken stream carries no error event: %q", body)
				}
				want := "switchyard_gateway_upstream_truncated_total{body=\"json\"} 1\nswitchyard_gateway_upstream_truncated_total{body=\"stream\"} 0\n"
				if stream {
					want = "switchyard_gateway_upstream_truncated_total{body=\"json\"} 0\nswitchyard_gateway_upstream_truncated_total{body=\"stream\"} 1\n"
				}
				poll.Until(t, waitTimeout, func() bool {
					return testutil.GatherAndCompare(
						e.reg,
						strings.NewReader(truncatedHelp+want),
						"switchyard_gateway_upstream_truncated_total",
					) == nil
				}, "the truncation counted")
				// The gateway keeps serving: the next request goes to the whole pod.
				e.sched.mu.Lock()
				e.sched.order = []string{whole}
				e.sched.mu.Unlock()
				resp, err = client.Post(
					e.url+"/v1/completions",
					"application/json",
					strings.NewReader(`{"model":"llama","prompt":"x"}`),
				)
				if err != nil {
					t.Fatal(err)
				}
				body, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || string(body) != `{"ok":true}` {
					t.Fatalf("after a truncation: status %d body %q err %v", resp.StatusCode, body, err)
				}
			})
		}
	}
}

const truncatedHelp = `# HELP switchyard_gateway_upstream_truncated_total Answers aborted because the model server's body broke after the response headers were sent (connection closed short of Content-Length or before the last chunk), by body kind (stream, json).
# TYPE switchyard_gateway_upstream_truncated_total counter
`
