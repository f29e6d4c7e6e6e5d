package adversarial

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// tenantPost sends body to url/path as tenant and returns the status, the Retry-After header,
// the error code (for an error) and the body.
func tenantPost(t *testing.T, url, path, tenant, body string) (status int, retryAfter, code, text string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if tenant != "" {
		req.Header.Set("x-switchyard-tenant", tenant)
	}
	cl := &http.Client{Timeout: 30 * time.Second}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error apiError `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%d answer is not an OpenAI-style error: %q", resp.StatusCode, b)
		}
		code = e.Error.Code
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), code, string(b)
}

// TestGatewayTenantLimits runs a real gateway with --tenant-limits-file: a tenant over its
// concurrency or request rate gets the router's 429 rate_limit_exceeded with Retry-After (and
// no overflow marker) while another tenant is served; unlisted tenants share the "*" entry; a
// changed file applies without a restart, a broken one keeps the limits in force (counted), and
// a broken file at start stops the gateway naming the line.
func TestGatewayTenantLimits(t *testing.T) {
	w := newWorld(t)
	file := w.Write("tenant-limits.yaml", "acme:\n  requests_per_second: 1\n\"*\":\n  requests_per_second: 1\nfree: {}")
	gw := w.Gateway("adv-tenants", "us-east-1", []string{w.Pod("h100").Listen}, "--tenant-limits-file="+file)
	url := "http://" + gw.Listen
	body := `{"model":"` + harness.TestModel + `","prompt":"hello","max_tokens":2}`

	if st, _, _, b := tenantPost(t, url, "/v1/completions", "acme", body); st != http.StatusOK {
		t.Fatalf("acme's first request: %d %s", st, b)
	}
	st, retry, code, b := tenantPost(t, url, "/v1/completions", "acme", body)
	if st != http.StatusTooManyRequests || code != "rate_limit_exceeded" || retry == "" ||
		!strings.Contains(b, "requests_per_second") {
		t.Fatalf("acme's second request in the second: %d Retry-After %q %s, want 429 rate_limit_exceeded", st, retry, b)
	}
	for range 5 {
		if st, _, _, b := tenantPost(
			t,
			url,
			"/v1/chat/completions",
			"free",
			`{"model":"`+harness.TestModel+`","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`,
		); st != http.StatusOK {
			t.Fatalf("a tenant without limits: %d %s", st, b)
		}
	}
	// Strangers, and requests naming no tenant, share "*": one of the two is refused.
	st1, _, _, _ := tenantPost(t, url, "/v1/completions", "stranger-1", body)
	st2, _, code2, _ := tenantPost(t, url, "/v1/completions", "", body)
	if st1 != http.StatusOK || st2 != http.StatusTooManyRequests || code2 != "rate_limit_exceeded" {
		t.Fatalf("an unlisted tenant then none: %d, %d %q; want 200 then 429 (shared * entry)", st1, st2, code2)
	}

	// A broken file keeps the limits; a valid change applies.
	if err := os.WriteFile(file, []byte("acme:\n  requests_per_second: -1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !poll.Within(20*time.Second, func() bool {
		return metricValue(t, gw.Metrics, "switchyard_gateway_tenant_limits_reload_errors_total") >= 1
	}) {
		t.Fatalf("a broken file was not counted\n%s", gw.Log())
	}
	time.Sleep(1100 * time.Millisecond) // acme's bucket holds one again
	tenantPost(t, url, "/v1/completions", "acme", body)
	if st, _, _, _ := tenantPost(t, url, "/v1/completions", "acme", body); st != http.StatusTooManyRequests {
		t.Fatalf("after a broken file: %d, want the limits in force (429)", st)
	}
	if err := os.WriteFile(file, []byte("acme:\n  max_concurrent: 100\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !poll.Within(20*time.Second, func() bool {
		for range 3 {
			if st, _, _, _ := tenantPost(t, url, "/v1/completions", "acme", body); st != http.StatusOK {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the raised limits did not apply\n%s", gw.Log())
	}
	if n := metricValue(
		t,
		gw.Metrics,
		`switchyard_gateway_tenant_refused_total{limit="requests_per_second",tenant="acme"}`,
	); n < 2 {
		t.Fatalf("acme's refusals counted %v, want at least 2", n)
	}

	bad := w.Write("bad-limits.yaml", "acme:\n  tokens_per_minute: lots")
	refusesToStart(t, "cluster-gateway", []string{"--cluster=adv-bad", "--region=us-east-1",
		"--endpoints=127.0.0.1:1", "--tenant-limits-file=" + bad}, "tokens_per_minute must be a whole number")
}
