package adversarial

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// TestSessionStaysOnItsPod runs a multi-turn conversation with one session id through the real
// gateway over four equal pods, interleaved with other conversations: every turn lands on the pod
// of the first (x-switchyard-endpoint) while that pod has room, although no turn repeats another's
// prompt (the prefix-cache scorer has nothing to go on). The same session id from another tenant
// is a conversation of its own, an over-long session id is refused 400 and counted, and the
// gateway's session table is bounded and reported. Turns are 200 ms apart (a user's think time
// is seconds): back to back, a pod's scrape still shows the previous turn running, and the
// predicted-TTFT scorer rates the pod that just served about half as fast as an idle one.
func TestSessionStaysOnItsPod(t *testing.T) {
	w := newWorld(t)
	var pods []string
	for range 4 {
		pods = append(pods, w.Pod("h100").Listen)
	}
	gw := w.Gateway("adv-session", "us-east-1", pods)
	client := &http.Client{Timeout: 20 * time.Second}
	send := func(tenant, session, prompt string) (int, string) {
		t.Helper()
		body := fmt.Sprintf(`{"model":%q,"prompt":%q,"max_tokens":2}`, harness.TestModel, prompt)
		req, err := http.NewRequest(http.MethodPost, "http://"+gw.Listen+"/v1/completions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if session != "" {
			req.Header.Set(contract.HeaderSessionID, session)
		}
		if tenant != "" {
			req.Header.Set(contract.HeaderTenant, tenant)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get(contract.HeaderEndpoint)
	}
	// Warm up: every pod served and measured, so the predicted-TTFT scorer sees equal pods.
	for i := range 40 {
		if status, _ := send("", "", fmt.Sprintf("warm-up %d", i)); status != http.StatusOK {
			t.Fatalf("warm-up: %d", status)
		}
	}
	home := ""
	for turn := range 30 {
		status, pod := send("acme", "conv-1", fmt.Sprintf("turn %d of the conversation: a new question", turn))
		if status != http.StatusOK || pod == "" {
			t.Fatalf("turn %d: status %d, endpoint %q", turn, status, pod)
		}
		if home == "" {
			home = pod
		} else if pod != home {
			t.Fatalf("turn %d served by %s, want %s (the session's pod, which has room)", turn, pod, home)
		}
		// Other conversations in between, each on its own session, then the user's think time:
		// longer than a scrape interval, so the pods' metrics no longer show the last turn running.
		if status, _ := send("acme", fmt.Sprintf("other-%d", turn), fmt.Sprintf("other %d", turn)); status != http.StatusOK {
			t.Fatalf("other conversation: %d", status)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_session_affinity_decisions_total", "outcome=stuck"); got < 29 {
		t.Fatalf("%g turns stuck, want at least 29", got)
	}
	// Another tenant naming the same session id starts its own session.
	before := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_session_affinity_decisions_total", "outcome=new")
	if status, _ := send("rival", "conv-1", "a rival's turn"); status != http.StatusOK {
		t.Fatalf("rival: %d", status)
	}
	if got := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_session_affinity_decisions_total", "outcome=new"); got != before+1 {
		t.Fatalf("new sessions %g after a rival tenant's conv-1, want %g", got, before+1)
	}
	if n := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_session_affinity_sessions"); n != 32 {
		t.Fatalf("%g sessions held, want 32", n)
	}
	// An over-long session id: 400 naming the header, counted; everyone else still served.
	if status, _ := send("acme", strings.Repeat("x", contract.MaxSessionID+1), "too long"); status != http.StatusBadRequest {
		t.Fatalf("over-long session id: %d, want 400", status)
	}
	if got := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_invalid_header_requests_total", "header="+contract.HeaderSessionID); got != 1 {
		t.Fatalf("invalid session headers counted %g, want 1", got)
	}
	if status, pod := send("acme", "conv-1", "the last turn"); status != http.StatusOK || pod != home {
		t.Fatalf("after the refusal: %d on %s, want 200 on %s", status, pod, home)
	}
}
