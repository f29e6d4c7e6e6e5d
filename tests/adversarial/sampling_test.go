package adversarial

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// TestClientCannotForceSampling sends completions whose traceparent has the sampled flag set
// through a real router and gateway that trace with --trace-sample-ratio=0. Through a router
// with the default --trace-remote-parent (ignore) nothing is exported by either process, and
// the pod receives an unsampled traceparent of another trace than the client's: the client can
// neither force its requests to be recorded nor choose their trace. Through a second router of
// the same region run with --trace-remote-parent=respect, the client's sampled flag is
// followed, and the router's and the gateway's spans are exported under the client's trace.
func TestClientCannotForceSampling(t *testing.T) {
	t.Parallel() // correctness only, no timing: runs beside the suite's other parallel tests
	recv, otlp := startReceiver(t, "grpc")
	tracingFlags := []string{"--otlp-endpoint=" + otlp, "--otlp-insecure", "--trace-sample-ratio=0"}
	w := newWorld(t)
	pod := w.Pod("h100")
	gw := w.Gateway("adv-sampling", "us-east-1", []string{pod.Listen}, tracingFlags...)
	edge := w.Router("us-east-1", "", tracingFlags...)
	trusting := w.Router("us-east-1", edge.EtcdURL(), append(tracingFlags, "--trace-remote-parent=respect")...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, r := range []*harness.Node{edge, trusting} {
		if err := harness.WaitClusters(ctx, "http://"+r.Admin, w.Token(), 1, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}

	const forcedTrace, respectedTrace = "5cf92f3577b34da6a3ce929d0e0e4736", "6df92f3577b34da6a3ce929d0e0e4736"
	const requests = 20
	for i := range requests {
		podTP := sampledCompletion(t, edge.Listen, forcedTrace)
		if strings.Contains(podTP, forcedTrace) || !strings.HasSuffix(podTP, "-00") {
			t.Fatalf("request %d: the pod received traceparent %q, want an unsampled one of another trace", i, podTP)
		}
	}
	if podTP := sampledCompletion(
		t,
		trusting.Listen,
		respectedTrace,
	); !strings.HasPrefix(
		podTP,
		"00-"+respectedTrace+"-",
	) ||
		!strings.HasSuffix(podTP, "-01") {
		t.Fatalf("through the respecting router the pod received traceparent %q, want a sampled one of trace %s",
			podTP, respectedTrace)
	}

	for _, n := range []*harness.Node{edge, trusting, gw} { // SIGTERM flushes the spans still queued
		if err := n.Stop(30 * time.Second); err != nil {
			t.Fatalf("stop %s: %v", n.Name(), err)
		}
	}
	tid, _ := hex.DecodeString(respectedTrace)
	poll.Until(t, 10*time.Second, func() bool {
		spans := recv.trace(tid)
		return len(spans["router.request"]) == 1 && len(spans["gateway.request"]) == 1
	}, "the respected trace's router and gateway spans at the receiver")
	recv.mu.Lock()
	defer recv.mu.Unlock()
	for _, s := range recv.spans {
		if string(s.span.GetTraceId()) != string(tid) {
			t.Errorf("%s exported span %s of trace %x: a client's sampled flag was followed at ratio 0",
				s.service, s.span.GetName(), s.span.GetTraceId())
		}
	}
}

// sampledCompletion sends one completion to addr with a sampled traceparent of trace and
// returns the traceparent the pod received.
func sampledCompletion(t *testing.T, addr, trace string) string {
	t.Helper()
	body := `{"model":"` + harness.TestModel + `","prompt":"hello","max_tokens":2}`
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+trace+"-00f067aa0ba902b7-01")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("completion through %s: %d", addr, resp.StatusCode)
	}
	return resp.Header.Get("X-Modelsim-Traceparent")
}
