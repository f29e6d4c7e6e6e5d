package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/proxy"
)

// gatewayDur returns the dur of the gateway's Server-Timing metric: the last one named gateway.
func gatewayDur(t *testing.T, h http.Header) time.Duration {
	t.Helper()
	var (
		dur   time.Duration
		found bool
	)
	for _, v := range h.Values(proxy.HeaderServerTiming) {
		for _, m := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(m), ";")
			val, ok := strings.CutPrefix(params, "dur=")
			if name != proxy.TimingMetric || !ok {
				continue
			}
			ms, err := strconv.ParseFloat(val, 64)
			if err != nil {
				t.Fatalf("Server-Timing %q: %v", v, err)
			}
			dur, found = time.Duration(ms*float64(time.Millisecond)), true
		}
	}
	if !found {
		t.Fatalf("no %s metric in Server-Timing %q", proxy.TimingMetric, h.Values(proxy.HeaderServerTiming))
	}
	return dur
}

// Every answer, streamed or an error, says how long the gateway took to its headers, including
// the model server's own time, and keeps the model server's own Server-Timing metrics.
func TestServerTimingOnEveryAnswer(t *testing.T) {
	const podDelay = 120 * time.Millisecond
	up := upstream(t, func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(podDelay)
		w.Header().Set("Server-Timing", "engine;dur=1, gateway;dur=99999")
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n")
	})
	e := newEnv(t, nil, up)

	start := time.Now()
	resp := post(t, e.url+"/v1/chat/completions", chatBody, nil)
	elapsed := time.Since(start)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "[DONE]") {
		t.Fatalf("body %q", body)
	}
	if d := gatewayDur(t, resp.Header); d < podDelay || d > elapsed {
		t.Errorf("gateway dur %v, want between the pod's %v and the client's %v", d, podDelay, elapsed)
	}
	if !strings.Contains(strings.Join(resp.Header.Values("Server-Timing"), ","), "engine;dur=1") {
		t.Errorf("the model server's own metric was dropped: %q", resp.Header.Values("Server-Timing"))
	}

	resp = post(t, e.url+"/v1/completions", `{"model":"nope"}`, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status %d, want 404", resp.StatusCode)
	}
	if d := gatewayDur(t, resp.Header); d < 0 || d > time.Second {
		t.Errorf("error answer gateway dur %v", d)
	}
}

// A stream's headers leave the gateway as soon as the model server sends its own, not with the
// first token: the client's wait for them is Server-Timing's dur plus the network, so a global
// router measuring the round trip does not count the prefill as network time.
func TestStreamHeadersBeforeFirstToken(t *testing.T) {
	const prefill = 300 * time.Millisecond
	up := upstream(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(prefill)
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n")
	})
	e := newEnv(t, nil, up)

	start := time.Now()
	resp := post(t, e.url+"/v1/chat/completions", chatBody, nil)
	headers := time.Since(start)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	total := time.Since(start)
	if !strings.Contains(string(body), "[DONE]") || total < prefill {
		t.Fatalf("body %q after %v", body, total)
	}
	if headers >= prefill {
		t.Errorf("headers after %v, want before the first token (%v)", headers, prefill)
	}
	if d := gatewayDur(t, resp.Header); d >= prefill {
		t.Errorf("gateway dur %v counts the prefill (%v)", d, prefill)
	}
}
