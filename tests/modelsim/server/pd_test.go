package server_test

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

// metric returns the value of the sample named series (name and labels as exposed) on base's
// /metrics, or -1 when absent.
func metric(t *testing.T, base, series string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return -1
}

func pdPost(t *testing.T, url, body, prefiller string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(server.PrefillerHeader, prefiller)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body) // the whole answer: closing a stream early cancels it
	return resp.StatusCode
}

func TestRemotePrefill(t *testing.T) {
	prefill, _ := start(t, func(c *server.Config) { c.Role = server.RolePrefill })
	decode, _ := start(t, func(c *server.Config) { c.Role = server.RoleDecode })
	prompt := strings.Repeat("word ", 800) // 1,000 tokens
	body := `{"model":"llama","prompt":"` + prompt + `","max_tokens":8,"stream":true}`
	addr := strings.TrimPrefix(prefill, "http://")

	if code := pdPost(t, decode+"/v1/completions", body, addr); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	if n := metric(t, prefill, "modelsim_remote_decode_prefills_total"); n != 1 {
		t.Errorf("prefill pod prefilled %v requests for a decode pod, want 1", n)
	}
	if n := metric(t, prefill, `vllm:generation_tokens_total{model_name="llama"}`); n != 1 {
		t.Errorf("prefill pod generated %v tokens, want 1 (max_tokens 1)", n)
	}
	if n := metric(t, decode, `modelsim_remote_prefills_total{result="ok"}`); n != 1 {
		t.Errorf("decode pod: %v remote prefills, want 1", n)
	}
	tokens := metric(t, decode, "modelsim_kv_transfer_tokens_total")
	if tokens < 900 {
		t.Errorf("decode pod pulled the KV of %v tokens, want the prompt's", tokens)
	}
	if n := metric(t, decode, `vllm:generation_tokens_total{model_name="llama"}`); n != 8 {
		t.Errorf("decode pod generated %v tokens, want 8", n)
	}

	// A prefill server does not pull, and an unreachable prefill pod is a 502.
	if code := pdPost(t, prefill+"/v1/completions", body, "127.0.0.1:1"); code != http.StatusOK {
		t.Errorf("prefill server: status %d", code)
	}
	if n := metric(t, prefill, `modelsim_remote_prefills_total{result="ignored"}`); n != 1 {
		t.Errorf("prefill server ignored %v prefiller headers, want 1", n)
	}
	if code := pdPost(t, decode+"/v1/completions", body, "127.0.0.1:1"); code != http.StatusBadGateway {
		t.Errorf("unreachable prefill pod: status %d, want 502", code)
	}
	if code := pdPost(t, decode+"/v1/completions", body, "no-port"); code != http.StatusBadRequest {
		t.Errorf("malformed prefiller: status %d, want 400", code)
	}
	if n := metric(t, decode, `modelsim_remote_prefills_total{result="failed"}`); n != 2 {
		t.Errorf("decode pod: %v failed remote prefills, want 2", n)
	}
}
