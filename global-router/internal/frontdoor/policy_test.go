package frontdoor_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

// refusing is a policy source that refuses some models: errs[model] is the error their policy
// lookup fails with (every model's when all is set); the others get the defaults.
type refusing struct {
	all  error
	errs map[string]error
}

func (p refusing) Policy(model string) (routing.Policy, error) {
	if p.all != nil {
		return routing.Policy{}, p.all
	}
	if err := p.errs[model]; err != nil {
		return routing.Policy{}, err
	}
	return routing.DefaultPolicy(), nil
}

var errUnreadable = fmt.Errorf("%w: /switchyard/v1/policies/llama at revision 9: bad JSON", routing.ErrPolicyUnreadable)

const adapterBody = `{"model":"sql-lora","prompt":"hello there","stream":true}`

// TestPolicyUnavailableFailsClosed: a request whose model has no policy in force is never routed
// with the defaults (which would let it leave its allowed regions): it is refused with 503
// policy_unavailable and Retry-After, counted by reason, while other models are served; with the
// local stand-in, a router whose policies are not loaded keeps requests in its region.
func TestPolicyUnavailableFailsClosed(t *testing.T) {
	tests := []struct {
		name       string
		specs      []clusterSpec
		pol        refusing
		mode       string
		body       string
		wantStatus int
		wantIn     string         // in the body
		wantRetry  string         // Retry-After
		wantHits   map[string]int // requests each cluster received
		wantReason string         // counted refusal reason; "" = none
	}{
		{"not loaded: refused", []clusterSpec{{"east", "us-east-1", 1, 0}, {"west", "us-west-2", 0, 0}},
			refusing{all: routing.ErrPolicyNotLoaded}, frontdoor.PolicyUnavailableRefuse, okBody,
			503, "routing policies are not loaded yet", "2", map[string]int{"east": 0, "west": 0}, "not_loaded"},
		{"not loaded: an unknown mode refuses too", []clusterSpec{{"east", "us-east-1", 0.1, 0}},
			refusing{all: routing.ErrPolicyNotLoaded}, "defaults", okBody,
			503, "policy_unavailable", "2", map[string]int{"east": 0}, "not_loaded"},
		{"not loaded, local: served in the region", []clusterSpec{{"east", "us-east-1", 0.9, 0}, {"west", "us-west-2", 0, 0}},
			refusing{all: routing.ErrPolicyNotLoaded}, frontdoor.PolicyUnavailableLocal, okBody,
			200, "[DONE]", "", map[string]int{"east": 1, "west": 0}, ""},
		{"not loaded, local: no local cluster is refused", []clusterSpec{{"west", "us-west-2", 0, 0}},
			refusing{all: routing.ErrPolicyNotLoaded}, frontdoor.PolicyUnavailableLocal, okBody,
			503, "only region us-east-1 is used", "2", map[string]int{"west": 0}, "not_loaded"},
		{
			"not loaded, local: a saturated region does not overflow",
			[]clusterSpec{{"east", "us-east-1", 1, 0}, {"west", "us-west-2", 0, 0}},
			refusing{all: routing.ErrPolicyNotLoaded},
			frontdoor.PolicyUnavailableLocal,
			okBody,
			429,
			"no_capacity",
			"1",
			map[string]int{"east": 0, "west": 0},
			"",
		},
		{"unreadable: refused", []clusterSpec{{"east", "us-east-1", 0.1, 0}, {"west", "us-west-2", 0, 0}},
			refusing{errs: map[string]error{"llama": errUnreadable}}, frontdoor.PolicyUnavailableRefuse, okBody,
			503, "routing policy of model `llama` cannot be read", "30", map[string]int{"east": 0, "west": 0}, "undecodable"},
		{"unreadable: refused in local mode too", []clusterSpec{{"east", "us-east-1", 0.1, 0}},
			refusing{errs: map[string]error{"llama": errUnreadable}}, frontdoor.PolicyUnavailableLocal, okBody,
			503, "cannot be read", "30", map[string]int{"east": 0}, "undecodable"},
		{"unreadable: another model is served", []clusterSpec{{"east", "us-east-1", 0.1, 0}},
			refusing{errs: map[string]error{"llama": errUnreadable}}, frontdoor.PolicyUnavailableRefuse, adapterBody,
			200, "[DONE]", "", map[string]int{"east": 1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleet(t, tt.specs...)
			reg := prometheus.NewPedanticRegistry()
			url := policyRouter(t, f, tt.pol, tt.mode, reg)
			resp, body := post(t, url, tt.body)
			if resp.StatusCode != tt.wantStatus || !strings.Contains(body, tt.wantIn) {
				t.Fatalf("status %d body %s, want %d containing %q", resp.StatusCode, body, tt.wantStatus, tt.wantIn)
			}
			if got := resp.Header.Get("Retry-After"); got != tt.wantRetry {
				t.Errorf("Retry-After %q, want %q", got, tt.wantRetry)
			}
			if tt.wantReason != "" {
				checkPolicyError(t, body)
			}
			for c, n := range tt.wantHits {
				if got := f.hits[c].Load(); got != int64(n) {
					t.Errorf("cluster %s received %d requests, want %d", c, got, n)
				}
			}
			counts := map[string]int{"not_loaded": 0, "undecodable": 0}
			if tt.wantReason != "" {
				counts[tt.wantReason] = 1
			}
			want := "# HELP switchyard_router_policy_unavailable_total Requests refused (503 policy_unavailable) because no routing policy was in force for their model: not_loaded (the router has not loaded its policies yet) or undecodable (the model's stored policy cannot be read).\n# TYPE switchyard_router_policy_unavailable_total counter\n"
			for _, r := range []string{"not_loaded", "undecodable"} {
				want += fmt.Sprintf("switchyard_router_policy_unavailable_total{reason=%q} %d\n", r, counts[r])
			}
			if err := testutil.GatherAndCompare(
				reg,
				strings.NewReader(want),
				"switchyard_router_policy_unavailable_total",
			); err != nil {
				t.Error(err)
			}
		})
	}
}

// checkPolicyError checks the OpenAI-style body of a policy refusal.
func checkPolicyError(t *testing.T, body string) {
	t.Helper()
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Code    string  `json:"code"`
			Param   *string `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	if e.Error.Type != "service_unavailable" || e.Error.Code != "policy_unavailable" || e.Error.Param == nil ||
		*e.Error.Param != "model" {
		t.Fatalf("error %+v, want service_unavailable / policy_unavailable on param model", e.Error)
	}
	if strings.Contains(e.Error.Message, "bad JSON") || strings.Contains(e.Error.Message, "/switchyard/") {
		t.Fatalf("the client is told the stored value's details: %q", e.Error.Message)
	}
}

// TestPolicyInForce: the front door's Policy (what ExplainRoute reports) agrees with what a
// request gets.
func TestPolicyInForce(t *testing.T) {
	tests := []struct {
		name    string
		pol     refusing
		mode    string
		want    []string // allowed regions
		wantErr error
	}{
		{"loaded: the model's policy", refusing{}, frontdoor.PolicyUnavailableRefuse, nil, nil},
		{
			"not loaded: refused",
			refusing{all: routing.ErrPolicyNotLoaded},
			frontdoor.PolicyUnavailableRefuse,
			nil,
			routing.ErrPolicyNotLoaded,
		},
		{
			"not loaded, local: the region only",
			refusing{all: routing.ErrPolicyNotLoaded},
			frontdoor.PolicyUnavailableLocal,
			[]string{"us-east-1"},
			nil,
		},
		{
			"unreadable, local: refused",
			refusing{all: errUnreadable},
			frontdoor.PolicyUnavailableLocal,
			nil,
			routing.ErrPolicyUnreadable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := frontdoor.DefaultConfig()
			cfg.Region, cfg.PolicyUnavailable = "us-east-1", tt.mode
			srv := frontdoor.New(cfg, emptyTable{}, tt.pol, nil, nil, nil)
			got, err := srv.Policy("llama")
			if tt.wantErr != nil {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr.Error()) {
					t.Fatalf("Policy = %+v, %v; want %v", got, err, tt.wantErr)
				}
				if _, _, derr := srv.Decide("llama", nil); derr == nil || derr.Error() != err.Error() {
					t.Fatalf("Decide = %v, want the policy's error %v", derr, err)
				}
				return
			}
			if err != nil || strings.Join(got.AllowedRegions, ",") != strings.Join(tt.want, ",") ||
				got.OverflowThreshold != 0.8 {
				t.Fatalf("Policy = %+v, %v; want allowed regions %v", got, err, tt.want)
			}
		})
	}
}

// policyRouter starts a us-east-1 front door over f with the policy source pol and the given
// PolicyUnavailable mode.
func policyRouter(t *testing.T, f *fleet, pol frontdoor.Policies, mode string, reg prometheus.Registerer) string {
	t.Helper()
	tb := clustertable.New(
		clustertable.Config{Region: "us-east-1", RTT: map[string]time.Duration{"us-west-2": 70 * time.Millisecond}},
		f,
		nil,
	)
	fwd, err := forward.New(forward.DefaultConfig(), tb)
	if err != nil {
		t.Fatal(err)
	}
	cfg := frontdoor.DefaultConfig()
	cfg.Region, cfg.QueueWait, cfg.PolicyUnavailable = "us-east-1", 200*time.Millisecond, mode
	srv := httptest.NewServer(frontdoor.New(cfg, tb, pol, fwd, nil, frontdoor.NewMetrics(reg)).Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}
