package pipeline_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/bbr"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/flowcontrol"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/tenantlimits"
	"github.com/switchyard-dev/switchyard/contract"
)

// TestTenantLimits: a request over its tenant's limit is refused 429 rate_limit_exceeded with
// Retry-After and no overflow marker; an answered one is charged the usage it reported, a
// failed one nothing.
func TestTenantLimits(t *testing.T) {
	pipe, limits := tenantPipeline(t, "acme: {max_concurrent: 1, tokens_per_minute: 1000}\n")
	get := func(name string) string {
		if name == contract.HeaderTenant {
			return "acme"
		}
		return ""
	}
	ctx := context.Background()
	body := []byte(`{"model":"llama","prompt":"abcdabcd","max_tokens":100}`)
	d, apiErr := pipe.Decide(ctx, body, get, nil)
	if apiErr != nil {
		t.Fatal(apiErr)
	}
	if used, inFlight := limits.Used("acme"); used != 102 || inFlight != 1 {
		t.Fatalf("reserved %d with %d in flight, want 2 + 100 and 1", used, inFlight)
	}
	_, refused := pipe.Decide(ctx, body, get, nil)
	if refused == nil || refused.Status != http.StatusTooManyRequests ||
		refused.Code != contract.ReasonRateLimitExceeded ||
		refused.RetryAfterSeconds != 1 ||
		refused.Overflow ||
		!strings.Contains(refused.Message, "tenant `acme` is over its max_concurrent limit") {
		t.Fatalf("second concurrent request: %+v, want 429 rate_limit_exceeded, Retry-After 1, no overflow", refused)
	}
	ep := d.Result.Targets[0].(*datastore.Endpoint)
	a := pipe.Begin(ctx, d, ep)
	a.Respond(http.StatusOK, false)
	pipe.Observe(
		ctx,
		a,
		[]byte(`{"choices":[{"text":"x"}],"usage":{"prompt_tokens":30,"completion_tokens":7}}`),
		time.Now(),
	)
	pipe.End(ctx, a, http.StatusOK, nil, true)
	pipe.Done(d)
	if used, inFlight := limits.Used("acme"); used != 37 || inFlight != 0 {
		t.Fatalf("charged %d with %d in flight, want the reported 37 and 0", used, inFlight)
	}

	d, apiErr = pipe.Decide(ctx, body, get, nil)
	if apiErr != nil {
		t.Fatal(apiErr)
	}
	a = pipe.Begin(ctx, d, ep)
	a.Respond(http.StatusServiceUnavailable, false)
	pipe.End(ctx, a, http.StatusServiceUnavailable, nil, true)
	pipe.Done(d)
	if used, inFlight := limits.Used("acme"); used != 37 || inFlight != 0 {
		t.Fatalf("after a failed answer: charged %d with %d in flight, want 37 and 0", used, inFlight)
	}
	_, over := pipe.Decide(ctx, []byte(`{"model":"llama","prompt":"abcd","max_tokens":990}`), get, nil)
	if over == nil || !strings.Contains(over.Message, "tokens_per_minute") || over.RetryAfterSeconds < 1 {
		t.Fatalf("over the token budget: %+v, want a tokens_per_minute 429", over)
	}
}

func tenantPipeline(t *testing.T, file string) (*pipeline.Pipeline, *tenantlimits.Enforcer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	lc := tenantlimits.DefaultConfig()
	lc.Path = path
	limits, err := tenantlimits.New(lc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := datastore.NewStore(nil, nil)
	store.Sync([]datastore.EndpointSpec{{Address: "10.0.0.1:8000"}})
	for _, ep := range store.Endpoints() {
		ep.SetModels(&datastore.Models{Base: "llama"})
	}
	sched := &capturing{eps: store.View().Endpoints()}
	router, err := bbr.NewRouter(bbr.DefaultConfig(), store)
	if err != nil {
		t.Fatal(err)
	}
	fcfg := flowcontrol.DefaultConfig()
	fcfg.Enabled = false
	flow, err := flowcontrol.New(fcfg, sched, flowcontrol.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := pipeline.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	pipe, err := pipeline.New(pipeline.Options{Router: router, Flow: flow, Classify: fcfg, Metrics: m, Tenants: limits})
	if err != nil {
		t.Fatal(err)
	}
	return pipe, limits
}
