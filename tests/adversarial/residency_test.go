package adversarial

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// otherModel is a second model the worlds below serve, whose policy nobody touches.
const otherModel = "adv-other"

// policyKey is where the routers keep a model's policy in etcd.
func policyKey(model string) string { return "/switchyard/v1/policies/" + model }

// TestResidencyPolicyNotLoaded: a router whose etcd is down when it starts must not route with the
// default policy (every region allowed). With a gateway of another region in gossip, requests are
// refused with 503 policy_unavailable and none reaches the gateway; once etcd comes up holding a
// residency policy that excludes that region, the policy holds (the model is refused, never sent
// there) while another model is routed there.
func TestResidencyPolicyNotLoaded(t *testing.T) {
	w := newWorld(t)
	etcd := w.Etcd()
	etcd.Put(t, policyKey(harness.TestModel), `{"model":"`+harness.TestModel+`","allowed_regions":["us-east-1"]}`)
	etcd.Kill() // down before the router starts
	west := w.Gateway("adv-west", "us-west-2", []string{w.Pod("h100").Listen, w.Pod("h100", "--model="+otherModel).Listen})
	r := w.RouterNoWait("us-east-1", etcd.URL)
	waitModels(t, r, harness.TestModel, otherModel)

	if code, body := getStatus(
		t,
		"http://"+r.Metrics+"/readyz",
	); code != http.StatusServiceUnavailable ||
		!strings.Contains(body, "configuration not loaded") {
		t.Fatalf("/readyz with etcd down = %d %q, want 503", code, body)
	}
	for _, model := range []string{harness.TestModel, otherModel} {
		for range 3 {
			resp, e := complete(t, r, model)
			if resp.StatusCode != http.StatusServiceUnavailable || e.Code != "policy_unavailable" ||
				resp.Header.Get("Retry-After") == "" {
				t.Fatalf(
					"%s with policies not loaded: %d %+v (Retry-After %q), want 503 policy_unavailable",
					model,
					resp.StatusCode,
					e,
					resp.Header.Get("Retry-After"),
				)
			}
		}
	}
	if n := harness.MetricValue(t, west.Metrics, "switchyard_gateway_requests_total"); n != 0 {
		t.Fatalf("%v requests reached the other region's gateway while the policies were not loaded", n)
	}
	if n := harness.MetricValue(t, r.Metrics, "switchyard_router_policy_unavailable_total", "reason=not_loaded"); n != 6 {
		t.Fatalf("refusals counted as not_loaded: %v, want 6", n)
	}

	if err := etcd.Start(); err != nil {
		t.Fatalf("etcd back: %v", err)
	}
	if !poll.Within(
		60*time.Second,
		func() bool { code, _ := getStatus(t, "http://"+r.Metrics+"/readyz"); return code == http.StatusOK },
	) {
		t.Fatalf("the router did not load its configuration once etcd was back\n%s", r.Log())
	}
	for range 5 {
		resp, e := complete(t, r, harness.TestModel)
		if resp.StatusCode != http.StatusServiceUnavailable || e.Code != "residency_policy" {
			t.Fatalf(
				"%s, allowed in us-east-1 only, with only us-west-2 serving: %d %+v, want 503 residency_policy",
				harness.TestModel,
				resp.StatusCode,
				e,
			)
		}
		resp, e = complete(t, r, otherModel)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Switchyard-Region") != "us-west-2" {
			t.Fatalf(
				"%s (no policy) after the load: %d %+v region %q, want 200 from us-west-2",
				otherModel,
				resp.StatusCode,
				e,
				resp.Header.Get("X-Switchyard-Region"),
			)
		}
	}
	if n := harness.MetricValue(t, west.Metrics, "switchyard_gateway_requests_total", "model="+harness.TestModel); n != 0 {
		t.Fatalf("%v requests for %s reached us-west-2, outside its allowed regions", n, harness.TestModel)
	}
}

// TestResidencyUndecodablePolicy writes policy values the router cannot read straight into etcd,
// over a looser policy that allowed every region: the model is refused (503 policy_unavailable),
// never routed with the defaults nor the older policy, while another model is served; the admin
// API shows the value as unreadable; a fixed value routes the model again and a deleted one
// returns it to the defaults.
func TestResidencyUndecodablePolicy(t *testing.T) {
	w := newWorld(t)
	etcd := w.Etcd()
	east := w.Gateway("adv-east", "us-east-1", []string{w.Pod("h100").Listen, w.Pod("h100", "--model="+otherModel).Listen})
	r := w.Router("us-east-1", etcd.URL)
	waitModels(t, r, harness.TestModel, otherModel)
	etcd.Put(
		t,
		policyKey(harness.TestModel),
		`{"model":"`+harness.TestModel+`","allowed_regions":["us-east-1","us-west-2"]}`,
	)
	waitStatus(t, r, harness.TestModel, http.StatusOK, "")

	bad := []struct {
		name, value string
	}{
		{"garbage bytes", "\x00\xff\xfe not a policy"},
		{"wrong json", `["us-east-1"]`},
		{"unknown field", `{"model":"` + harness.TestModel + `","allowed_region":["eu-west-1"]}`},
		{"invalid region name", `{"model":"` + harness.TestModel + `","allowed_regions":["eu-west-1; us-east-1"]}`},
	}
	for _, b := range bad {
		etcd.Put(t, policyKey(harness.TestModel), b.value)
		waitStatus(t, r, harness.TestModel, http.StatusServiceUnavailable, "policy_unavailable")
		if resp, e := complete(t, r, otherModel); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: another model is not served: %d %+v", b.name, resp.StatusCode, e)
		}
		if n := harness.MetricValue(t, r.Metrics, "switchyard_router_config_unreadable_policies"); n != 1 {
			t.Fatalf("%s: unreadable policies gauge %v, want 1", b.name, n)
		}
		out, err := ctl(w, r, "policy", "get", harness.TestModel)
		if err == nil || !strings.Contains(out, "DATA_LOSS") || !strings.Contains(out, "refused") {
			t.Fatalf("%s: switchyardctl policy get = %v %q, want DATA_LOSS saying the model is refused", b.name, err, out)
		}
	}
	before := harness.MetricValue(t, east.Metrics, "switchyard_gateway_requests_total", "model="+harness.TestModel)
	for range 5 {
		if resp, e := complete(
			t,
			r,
			harness.TestModel,
		); resp.StatusCode != http.StatusServiceUnavailable ||
			e.Code != "policy_unavailable" {
			t.Fatalf("%s with an unreadable policy: %d %+v", harness.TestModel, resp.StatusCode, e)
		}
	}
	if after := harness.MetricValue(
		t,
		east.Metrics,
		"switchyard_gateway_requests_total",
		"model="+harness.TestModel,
	); after != before {
		t.Fatalf("%v requests for a model with an unreadable policy reached a gateway", after-before)
	}
	if n := harness.MetricValue(t, r.Metrics, "switchyard_router_policy_unavailable_total", "reason=undecodable"); n < 5 {
		t.Fatalf("refusals counted as undecodable: %v, want >= 5", n)
	}

	// Fixed: the watch applies it and the model routes again, under the fixed policy.
	etcd.Put(t, policyKey(harness.TestModel), `{"model":"`+harness.TestModel+`","allowed_regions":["us-west-2"]}`)
	waitStatus(t, r, harness.TestModel, http.StatusServiceUnavailable, "residency_policy")
	// Deleted: no policy means the defaults.
	etcd.Delete(t, policyKey(harness.TestModel))
	waitStatus(t, r, harness.TestModel, http.StatusOK, "")
	if n := harness.MetricValue(t, r.Metrics, "switchyard_router_config_unreadable_policies"); n != 0 {
		t.Fatalf("unreadable policies gauge after the delete %v, want 0", n)
	}
}

// apiError is the error object of an OpenAI-style error answer.
type apiError struct {
	Message, Type, Code string
}

// complete sends a short completion for model through router and returns the response (body
// read) and its error object, if any.
func complete(t *testing.T, router *harness.Node, model string) (*http.Response, apiError) {
	t.Helper()
	body := `{"model":"` + model + `","prompt":"hello","max_tokens":2}`
	cl := &http.Client{Timeout: 30 * time.Second}
	resp, err := cl.Post("http://"+router.Listen+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error apiError `json:"error"`
	}
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%d answer is not an OpenAI-style error: %q", resp.StatusCode, b)
		}
	}
	return resp, e.Error
}

// waitStatus sends requests for model until one is answered status (and, for an error, code),
// failing the test after a generous bound.
func waitStatus(t *testing.T, router *harness.Node, model string, status int, code string) {
	t.Helper()
	var got int
	var last apiError
	if !poll.Within(20*time.Second, func() bool {
		resp, e := complete(t, router, model)
		got, last = resp.StatusCode, e
		return got == status && e.Code == code
	}) {
		t.Fatalf("%s still answered %d %+v, want %d %s\n%s", model, got, last, status, code, router.Log())
	}
}

// waitModels waits until the router's /v1/models lists every model (gossip has brought them).
func waitModels(t *testing.T, router *harness.Node, models ...string) {
	t.Helper()
	if !poll.Within(60*time.Second, func() bool {
		_, body := getStatus(t, "http://"+router.Listen+"/v1/models")
		for _, m := range models {
			if !strings.Contains(body, `"`+m+`"`) {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the router never listed %v\n%s", models, router.Log())
	}
}

// ctl runs switchyardctl against router's admin API with the world's token.
func ctl(w *harness.World, router *harness.Node, args ...string) (string, error) {
	full := append([]string{"--addr=http://" + router.Admin, "--token-file=" + w.TokenFile}, args...)
	out, err := exec.Command(filepath.Join(binDir, "switchyardctl"), full...).CombinedOutput()
	return string(out), err
}

func getStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	cl := &http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
