package extproc_test

import (
	"context"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/tracing"
)

const clientTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// decisionMutation sends one request through ext_proc with the client's traceparent and
// returns the header mutation of the decision, after the stream ended.
func decisionMutation(t *testing.T, e *env) *extprocv3.HeaderMutation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := e.client.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sendRequest(t, s, []byte(`{"model":"llama","prompt":"hi"}`), nil, "traceparent", clientTP)
	r, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := s.Recv(); err != nil {
			break
		}
	}
	return r.GetRequestHeaders().GetResponse().GetHeaderMutation()
}

// TestTraceparentHeaderMutation checks that with tracing on the decision's header mutations
// set traceparent to the gateway's upstream span (ext_proc changes the request to the pod only
// through them), a child of the request's span, itself a child of the client's; and that with
// tracing off no traceparent is set, so the client's passes through Envoy unchanged.
func TestTraceparentHeaderMutation(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	mut := decisionMutation(t, newEnvWith(t, envOptions{tracer: tracing.NewTracer(tp)}))
	var upstream, request sdktrace.ReadOnlySpan
	deadline := time.Now().Add(10 * time.Second)
	for (upstream == nil || request == nil) && time.Now().Before(deadline) {
		for _, s := range rec.Ended() {
			switch s.Name() {
			case "gateway.upstream":
				upstream = s
			case "gateway.request":
				request = s
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if upstream == nil || request == nil {
		t.Fatalf("spans ended: %v", rec.Ended())
	}
	want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + upstream.SpanContext().SpanID().String() + "-01"
	if got := headerValue(mut, "traceparent"); got != want {
		t.Errorf("traceparent mutation %q, want the upstream span's %q", got, want)
	}
	if upstream.Parent().SpanID() != request.SpanContext().SpanID() ||
		request.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf(
			"span tree: upstream's parent %s, request %s whose parent %s",
			upstream.Parent().SpanID(),
			request.SpanContext().SpanID(),
			request.Parent().SpanID(),
		)
	}

	if got := headerValue(decisionMutation(t, newEnv(t)), "traceparent"); got != "" {
		t.Errorf("tracing off: traceparent mutation %q, want none", got)
	}
}
