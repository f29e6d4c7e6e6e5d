package adversarial

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// pdSend posts a streamed completion of prompt with maxTokens to the gateway and returns the
// response with its body read to the end.
func pdSend(t *testing.T, gw *harness.Node, prompt string, maxTokens int) *http.Response {
	t.Helper()
	resp := pdOpen(t, gw, prompt, maxTokens)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// pdOpen posts a streamed completion and returns the response with its body unread.
func pdOpen(t *testing.T, gw *harness.Node, prompt string, maxTokens int) *http.Response {
	t.Helper()
	body := `{"model":"` + harness.TestModel + `","prompt":"` + prompt + `","max_tokens":` +
		strconv.Itoa(maxTokens) + `,"stream":true,"ignore_eos":true}`
	resp, err := http.Post("http://"+gw.Listen+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestPrefillDecodeSelective runs the real gateway with the shipped pd profile, which weighs
// each split. While the decode pod runs a batch, a long prompt is split (prefilling it there
// would stall 4 running sequences past the ITL budget); once the decode pod is idle, the same
// prompt is prefilled there (nothing to stall, and no KV transfer): decision local-prefill,
// counted, with no remote prefill.
func TestPrefillDecodeSelective(t *testing.T) {
	w := newWorld(t)
	prefill, decode, gw := pdWorld(t, w, "--profile=pd")
	long := strings.Repeat("disaggregate ", 650) // about 2,000 tokens

	// 1. A batch of 4 long generations on the decode pod (short prompts: below the threshold).
	var streams []*http.Response
	for range 4 {
		resp := pdOpen(t, gw, "keep decoding", 3000)
		if resp.StatusCode != http.StatusOK || resp.Header.Get(contract.HeaderPD) != "below-threshold" {
			t.Fatalf("batch request: status %d, pd %q", resp.StatusCode, resp.Header.Get(contract.HeaderPD))
		}
		if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil { // its first token
			t.Fatal(err)
		}
		streams = append(streams, resp)
	}
	resp := pdSend(t, gw, long, 8)
	if pd := resp.Header.Get(contract.HeaderPD); resp.StatusCode != http.StatusOK || pd != "prefill-decode" {
		t.Fatalf("long prompt beside a running batch: status %d, pd %q, want prefill-decode", resp.StatusCode, pd)
	}
	for _, s := range streams {
		s.Body.Close()
	}

	// 2. The batch gone, the same prompt stays on the decode pod.
	poll.Until(t, 30*time.Second, func() bool {
		return harness.MetricValue(t, decode.Listen, "vllm:num_requests_running") == 0
	}, "the decode pod's batch to end")
	// and the gateway to have scraped both pods since (a couple of scrapes each).
	scrapes := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_scrape_duration_seconds_count")
	poll.Until(t, 30*time.Second, func() bool {
		return harness.MetricValue(t, gw.Metrics, "switchyard_gateway_scrape_duration_seconds_count") >= scrapes+6
	}, "the gateway to scrape the idle decode pod")
	resp = pdSend(t, gw, strings.Repeat("prefill here ", 600), 8) // no prefix in common with the first
	if pd := resp.Header.Get(contract.HeaderPD); resp.StatusCode != http.StatusOK || pd != "local-prefill" ||
		resp.Header.Get(contract.HeaderPrefillEndpoint) != "" {
		t.Fatalf("long prompt on an idle decode pod: status %d, pd %q, prefill endpoint %q; want local-prefill",
			resp.StatusCode, pd, resp.Header.Get(contract.HeaderPrefillEndpoint))
	}
	if n := harness.MetricValue(t, prefill.Listen, "modelsim_remote_decode_prefills_total"); n != 1 {
		t.Fatalf("the prefill pod prefilled %v prompts for the decode pod, want 1 (the split only)", n)
	}
	for decision, want := range map[string]float64{"prefill-decode": 1, "local-prefill": 1, "below-threshold": 4} {
		got := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_pd_decisions_total", "decision="+decision)
		if got != want {
			t.Errorf("switchyard_gateway_pd_decisions_total{decision=%q} = %v, want %v", decision, got, want)
		}
	}
}

// TestPrefillPodKilled: the prefill pod dies (SIGKILL) under llm-d's fixed-threshold config,
// which splits every long prompt. The decode pod's remote prefill then fails (connection
// refused: modelsim answers 502 PrefillError, as llm-d's sidecar answers 502), and the gateway
// retries the decode pod without the prefill pod within its retry budget: every client gets
// its completion, marked x-switchyard-pd: prefill-failed, the fallbacks are counted, and once
// passive health ejects the dead prefill pod the decode pod prefills without trying it.
func TestPrefillPodKilled(t *testing.T) {
	w := newWorld(t)
	prefill, decode, gw := pdWorld(t, w, "--config="+w.Write("pd-fixed.yaml", pdFixedConfig))
	long := strings.Repeat("fall back ", 800) // about 2,000 tokens
	if resp := pdSend(t, gw, long, 4); resp.Header.Get(contract.HeaderPD) != "prefill-decode" {
		t.Fatalf("before the kill: pd %q, want prefill-decode", resp.Header.Get(contract.HeaderPD))
	}
	prefill.Kill()

	const n = 8
	fellBack := 0
	for i := range n {
		resp := pdSend(t, gw, long+strconv.Itoa(i), 4)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d after the kill: status %d, want 200 from the decode pod", i, resp.StatusCode)
		}
		switch pd := resp.Header.Get(contract.HeaderPD); pd {
		case "prefill-failed":
			fellBack++
		case "no-prefill-endpoint": // the dead pod was ejected (or its scrape went stale)
		default:
			t.Fatalf("request %d after the kill: pd %q", i, pd)
		}
		if got := resp.Header.Get(contract.HeaderEndpoint); got != "decode-0" {
			t.Fatalf("request %d served by %q, want decode-0", i, got)
		}
	}
	if fellBack == 0 || fellBack == n {
		t.Fatalf("%d of %d requests fell back: want some, then the dead pod ejected", fellBack, n)
	}
	failed := harness.MetricValue(t, decode.Listen, "modelsim_remote_prefills_total", "result=failed")
	counted := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_pd_fallbacks_total", "code=502")
	if failed != float64(fellBack) || counted != float64(fellBack) {
		t.Fatalf("decode pod failed %v remote prefills, gateway counted %v fallbacks; want %d each",
			failed, counted, fellBack)
	}
	if got := harness.MetricValue(t, gw.Metrics, "switchyard_gateway_retries_total", "reason=prefill"); got != failed {
		t.Fatalf("retries{reason=prefill} = %v, want %v", got, failed)
	}
}
