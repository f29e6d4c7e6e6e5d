package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSlowClientLatencyNotLearned: a client that stops reading a streamed answer holds back the
// gateway's reads of the pod's stream, so the tokens it meters arrive late. Such an answer is
// handed to the latency-learning hooks marked ClientStalled (and counted), so that a slow
// client cannot make the pod look slow to every other request and to the autoscaling signal;
// an answer read at once is not marked.
func TestSlowClientLatencyNotLearned(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events int           // SSE events of about 1 KiB the pod streams
		pause  time.Duration // before the client starts reading
		want   bool
	}{
		// 32 MiB: more than the loopback socket buffers between the gateway and the client hold.
		{"client stops reading", 32 << 10, time.Second, true},
		{"client reads", 16, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pad := strings.Repeat("x", 1000)
			pod := upstream(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				rc := http.NewResponseController(w)
				for i := range tc.events {
					_, _ = fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"%s%d\"}]}\n\n", pad, i)
					if i%64 == 0 {
						_ = rc.Flush()
					}
				}
				_, _ = io.WriteString(w, "data: [DONE]\n\n")
			})
			e := newEnv(t, nil, pod)
			e.sched.order = []string{pod}
			resp := post(t, e.url+"/v1/completions", `{"model":"llama","prompt":"hi","stream":true}`, nil)
			time.Sleep(tc.pause)
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || n < int64(tc.events)*1000 {
				t.Fatalf("status %d, %d bytes", resp.StatusCode, n)
			}
			var posts []bool
			deadline := time.Now().Add(waitTimeout)
			for len(posts) == 0 && time.Now().Before(deadline) {
				for _, p := range e.hooks.posts() {
					posts = append(posts, p.ClientStalled)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if len(posts) != 1 || posts[0] != tc.want {
				t.Fatalf("PostResponse ClientStalled = %v, want [%v]", posts, tc.want)
			}
			if got := counter(t, e, "switchyard_gateway_client_stalled_total"); got != float64(btoi(tc.want)) {
				t.Errorf("switchyard_gateway_client_stalled_total = %v, want %d", got, btoi(tc.want))
			}
		})
	}
}

// counter returns the value of the unlabelled counter name in e's registry.
func counter(t *testing.T, e *env, name string) float64 {
	t.Helper()
	n, err := testutil.GatherAndCount(e.reg, name)
	if err != nil || n != 1 {
		t.Fatalf("%s: %d series, %v", name, n, err)
	}
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
