package forward_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/tracing"
)

// TestAttemptSpans checks that every attempt is its own router.forward span, a child of the
// request's span, that a retry is marked so, and that each gateway received the traceparent of
// its attempt's span.
func TestAttemptSpans(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	record := func(name string, status int) string {
		return gateway(t, func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[name] = r.Header.Get("Traceparent")
			mu.Unlock()
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{}`)
		})
	}
	refusing, serving := record("refusing", http.StatusServiceUnavailable), record("serving", http.StatusOK)
	rec := tracetest.NewSpanRecorder()
	tr := tracing.NewTracer(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	cfg := forward.DefaultConfig()
	cfg.Tracer = tr
	f, err := forward.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	targets := []forward.Target{
		{Cluster: "a", Region: "r1", URL: refusing, Route: "local"},
		{Cluster: "b", Region: "r2", URL: serving, Route: "overflow"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tr.Start(tr.Extract(r.Context(), propagation.HeaderCarrier(r.Header)), "router.request", 0)
		defer span.End()
		body, _ := io.ReadAll(r.Body)
		if err := f.Forward(w, r.WithContext(ctx), body, targets, nil); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/completions", nil)
	req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var attempts []sdktrace.ReadOnlySpan
	var parent sdktrace.ReadOnlySpan
	// The request's span ends when the handler returns, which may be after the client has its
	// answer.
	ended := func() bool {
		attempts, parent = nil, nil
		for _, s := range rec.Ended() {
			switch s.Name() {
			case forward.SpanForward:
				attempts = append(attempts, s)
			case "router.request":
				parent = s
			}
		}
		return len(attempts) == 2 && parent != nil
	}
	poll.Until(t, 10*time.Second, ended, "two attempt spans and the request's span ended")
	for i, want := range []struct {
		gw, cluster, route string
		status             int64
	}{{"refusing", "a", "local", 503}, {"serving", "b", "retry", 200}} {
		s := attempts[i]
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("attempt %d is not a child of the request's span", i+1)
		}
		got := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			got[kv.Key] = kv.Value
		}
		if got[tracing.AttrCluster].AsString() != want.cluster || got[tracing.AttrRoute].AsString() != want.route ||
			got[tracing.AttrAttempt].AsInt64() != int64(i+1) || got[tracing.AttrStatus].AsInt64() != want.status {
			t.Errorf(
				"attempt %d attributes %v, want cluster %s route %s status %d",
				i+1,
				s.Attributes(),
				want.cluster,
				want.route,
				want.status,
			)
		}
		tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + s.SpanContext().SpanID().String() + "-01"
		if seen[want.gw] != tp {
			t.Errorf("gateway %s received traceparent %q, want its attempt's %q", want.gw, seen[want.gw], tp)
		}
	}
}
