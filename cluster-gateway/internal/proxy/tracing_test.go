package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/tracing"
	"github.com/switchyard-dev/switchyard/contract/poll"
)

const (
	clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpan  = "00f067aa0ba902b7"
	clientTP    = "00-" + clientTrace + "-" + clientSpan + "-01"
)

// seenTraceparents is an upstream that records the traceparent of every request it answers.
type seenTraceparents struct {
	mu   sync.Mutex
	seen []string
}

func (s *seenTraceparents) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) == 0 {
		return ""
	}
	return s.seen[len(s.seen)-1]
}

func (s *seenTraceparents) handler(answer string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Header.Get("Traceparent"))
		s.mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, answer)
	}
}

const usageAnswer = `{"choices":[{"text":"ok"}],"usage":{"prompt_tokens":7,"completion_tokens":3}}`

func TestTracingSpans(t *testing.T) {
	seen := &seenTraceparents{}
	up := upstream(t, seen.handler(usageAnswer))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(rec),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())),
	)
	e := newEnvWith(t, envOptions{tracer: tracing.NewTracer(tp)}, up)

	resp := post(
		t,
		e.url+"/v1/completions",
		`{"model":"llama","prompt":"a secret prompt"}`,
		map[string]string{"traceparent": clientTP},
	)
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	spans := map[string]sdktrace.ReadOnlySpan{}
	poll.Until(t, waitTimeout, func() bool {
		for _, s := range rec.Ended() {
			spans[s.Name()] = s
		}
		return len(spans) == 3
	}, "the request's spans")
	req, sched, upSpan := spans["gateway.request"], spans["gateway.schedule"], spans["gateway.upstream"]
	if req == nil || sched == nil || upSpan == nil {
		t.Fatalf("spans %v, want gateway.request, gateway.schedule, gateway.upstream", spans)
	}
	if got := req.Parent().SpanID().String(); got != clientSpan || req.SpanContext().TraceID().String() != clientTrace {
		t.Errorf("gateway.request's parent %s in trace %s, want the client's span", got, req.SpanContext().TraceID())
	}
	for _, s := range []sdktrace.ReadOnlySpan{sched, upSpan} {
		if s.Parent().SpanID() != req.SpanContext().SpanID() {
			t.Errorf("%s is not a child of gateway.request", s.Name())
		}
	}
	if want := "00-" + clientTrace + "-" + upSpan.SpanContext().SpanID().String() + "-01"; seen.last() != want {
		t.Errorf("the pod received traceparent %q, want the upstream span's %q", seen.last(), want)
	}
	checkAttrs(t, sched, map[attribute.Key]string{"server.address": up, "gen_ai.request.model": "llama"})
	checkAttrs(t, upSpan, map[attribute.Key]string{"gen_ai.usage.input_tokens": "7", "gen_ai.usage.output_tokens": "3",
		"http.response.status_code": "200"})
	checkAttrs(t, req, map[attribute.Key]string{"http.response.status_code": "200", "http.route": "/v1/completions"})
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.String(), "secret") {
				t.Errorf("%s carries prompt text in %s", s.Name(), kv.Key)
			}
		}
	}
}

func checkAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[attribute.Key]string) {
	t.Helper()
	got := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		got[kv.Key] = kv.Value.String()
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q", s.Name(), k, got[k], v)
		}
	}
}

// TestTracingOffPassesTraceparent checks that with tracing off the client's traceparent reaches
// the pod as it was sent.
func TestTracingOffPassesTraceparent(t *testing.T) {
	seen := &seenTraceparents{}
	e := newEnv(t, nil, upstream(t, seen.handler(usageAnswer)))
	resp := post(t, e.url+"/v1/completions", `{"model":"llama","prompt":"hi"}`, map[string]string{"traceparent": clientTP})
	resp.Body.Close()
	if seen.last() != clientTP {
		t.Fatalf("the pod received traceparent %q, want the client's %q", seen.last(), clientTP)
	}
}

// BenchmarkProxyTracing prices tracing on the proxy's request path: the same non-streaming
// completion through a gateway with tracing off, on (every request sampled, spans batched to
// an exporter that drops them), and on but not sampled (a client traceparent with the sampled
// flag off). The ratio sub-benchmark alternates requests between the off and on gateways and
// reports on/off, the time ratio, so that machine load weighs on both alike.
func BenchmarkProxyTracing(b *testing.B) {
	up := upstream(b, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, usageAnswer)
	})
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	off := newEnv(b, nil, up)
	on := newEnvWith(b, envOptions{tracer: tracing.NewTracer(tp)}, up)
	body := `{"model":"llama","prompt":"` + strings.Repeat("hello world ", 100) + `"}`
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	b.Run("off", func(b *testing.B) { postLoop(b, client, off.url, body) })
	b.Run("on", func(b *testing.B) { postLoop(b, client, on.url, body) })
	b.Run("on-unsampled", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			postOnce(b, client, on.url, body, "00-"+clientTrace+"-"+clientSpan+"-00")
		}
	})
	b.Run("ratio", func(b *testing.B) {
		b.ReportAllocs()
		var tOff, tOn time.Duration
		for b.Loop() {
			start := time.Now()
			postOnce(b, client, off.url, body, "")
			mid := time.Now()
			postOnce(b, client, on.url, body, "")
			tOff, tOn = tOff+mid.Sub(start), tOn+time.Since(mid)
		}
		b.ReportMetric(float64(tOn)/float64(tOff), "on/off")
	})
}

func postOnce(b *testing.B, client *http.Client, url, body, traceparent string) {
	req, err := http.NewRequest(http.MethodPost, url+"/v1/completions", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if traceparent != "" {
		req.Header.Set("Traceparent", traceparent)
	}
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d", resp.StatusCode)
	}
}
