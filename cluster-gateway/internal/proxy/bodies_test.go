package proxy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline/pipelinetest"
	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/poll"
)

// stalledUpload opens a connection that declares a body of declared bytes, sends sent of them
// and stalls; closing the connection ends it.
func stalledUpload(t *testing.T, url string, declared, sent int) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	head := fmt.Sprintf(
		"POST /v1/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		declared,
	)
	if _, err := io.WriteString(conn, head+`{"model":"llama","prompt":"`+strings.Repeat("x", sent-27)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestBodyBudget is the defence against stalled uploads: a body that declares far more than it
// sends holds about what arrived, not its declared length; once the in-flight body budget is
// spent a request is answered 503 with Retry-After and an OpenAI-style error, counted and
// logged; and when the stalled upload goes away its budget comes back and requests pass again.
func TestBodyBudget(t *testing.T) {
	up := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, `{"choices":[{"text":"ok"}]}`)
	})
	budget := body.NewBudget(20 << 10)
	logs := pipelinetest.NewLog()
	e := newEnvWith(t, envOptions{budget: budget, log: logs.Logger}, up)

	// 60,000 bytes declared (within the 64 KiB limit), 5,000 sent: 8 KiB held, not 60,001.
	stalled := stalledUpload(t, e.url, 60_000, 5_000)
	poll.Until(t, waitTimeout, func() bool { return budget.InUse() == 8<<10 }, "the stalled upload's buffer")

	req := `{"model":"llama","prompt":"` + strings.Repeat("y", 9000) + `"}`
	resp := post(t, e.url+"/v1/completions", req, nil)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var answer struct {
		Error struct{ Type, Code string } `json:"error"`
	}
	if err := json.Unmarshal(got, &answer); err != nil || resp.StatusCode != http.StatusServiceUnavailable ||
		resp.Header.Get(
			"Retry-After",
		) != "1" || answer.Error.Code != "body_budget_exhausted" || answer.Error.Type != "service_unavailable" {
		t.Fatalf("with the budget spent: %d, Retry-After %q, %s; want 503, 1, body_budget_exhausted",
			resp.StatusCode, resp.Header.Get("Retry-After"), got)
	}
	if n := pipelinetest.BodyRefused(t, e.reg, "http", "budget"); n != 1 {
		t.Fatalf("budget refusals counted %v, want 1", n)
	}
	if !strings.Contains(logs.String(), "request body budget spent") {
		t.Fatalf("no warning logged: %s", logs.String())
	}
	if budget.InUse() != 8<<10 {
		t.Fatalf("after the refusal %d bytes reserved, want the stalled upload's %d", budget.InUse(), 8<<10)
	}

	_ = stalled.Close()
	poll.Until(t, waitTimeout, func() bool { return budget.InUse() == 0 }, "the stalled upload's budget back")
	resp = post(t, e.url+"/v1/completions", req, nil)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after the stalled upload ended: %d, want 200", resp.StatusCode)
	}
	poll.Until(t, waitTimeout, func() bool { return budget.InUse() == 0 }, "the served request's budget back")
}

// TestBodyTooLargeCounted checks a body over the limit, declared or sent, is a 413 counted by
// reason.
func TestBodyTooLargeCounted(t *testing.T) {
	up := upstream(t, func(http.ResponseWriter, *http.Request) { t.Error("a body over the limit reached a pod") })
	e := newEnvWith(t, envOptions{budget: body.NewBudget(1 << 20)}, up)
	for _, chunked := range []bool{false, true} {
		b := `{"model":"llama","prompt":"` + strings.Repeat("z", 70_000) + `"}`
		req, _ := http.NewRequest(http.MethodPost, e.url+"/v1/completions", strings.NewReader(b))
		if chunked {
			req.ContentLength = -1 // sent chunked: the limit is found while reading
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("chunked=%v: %d, want 413", chunked, resp.StatusCode)
		}
	}
	if n := pipelinetest.BodyRefused(t, e.reg, "http", "too_large"); n != 2 {
		t.Fatalf("too-large refusals counted %v, want 2", n)
	}
}
