package pipeline_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// An attempt counts in the endpoint's in-flight figures, which a gateway reports to its peer
// replicas: a request waits for its first token (with its prompt tokens) from Begin until the
// first token arrives, and is in flight until End; one that ends before a first token leaves
// both.
func TestAttemptInFlightFigures(t *testing.T) {
	pipe, _ := tenantPipeline(t, "{}\n")
	ctx := context.Background()
	body := []byte(`{"model":"llama","prompt":"abcdabcdabcdabcd","stream":true}`)
	for _, firstToken := range []bool{true, false} {
		d, apiErr := pipe.Decide(ctx, body, func(string) string { return "" }, nil)
		if apiErr != nil {
			t.Fatal(apiErr)
		}
		ep := d.Result.Targets[0].(*datastore.Endpoint)
		prompt := int64(d.Request.PromptTokens)
		a := pipe.Begin(ctx, d, ep)
		if got, want := ep.OwnInFlight(), (framework.InFlightLoad{Requests: 1, Prefilling: 1,
			PrefillTokens: prompt}); got != want {
			t.Fatalf("after Begin: %+v, want %+v", got, want)
		}
		a.Respond(http.StatusOK, true)
		if firstToken {
			pipe.Observe(ctx, a, []byte("data: {\"choices\":[{\"text\":\"x\"}]}\n\n"), time.Now())
			if got := ep.OwnInFlight(); got != (framework.InFlightLoad{Requests: 1}) {
				t.Fatalf("after the first token: %+v, want 1 request, none prefilling", got)
			}
		}
		pipe.End(ctx, a, http.StatusOK, nil, true)
		pipe.Done(d)
		if got := ep.OwnInFlight(); got != (framework.InFlightLoad{}) {
			t.Fatalf("after End (first token %v): %+v, want nothing", firstToken, got)
		}
	}
}
