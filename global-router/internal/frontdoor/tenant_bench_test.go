package frontdoor_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/ratelimit"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
)

// BenchmarkServeInferenceTenant is BenchmarkServeInference for a request charged to a tenant
// with every limit (never reached): the tenant's admission and reconciliation on the request
// path, and for a stream without include_usage the body rewrite and the stripping of the usage
// chunk from an answer of five token events.
func BenchmarkServeInferenceTenant(b *testing.B) {
	for _, bc := range []struct {
		name   string
		limits ratelimit.Limits
		body   string
	}{
		{"untenanted", ratelimit.Limits{}, ""},
		{"requests_only", ratelimit.Limits{RequestsPerSecond: 1e9, MaxConcurrent: 1 << 20}, benchBody},
		{"tokens_stream_asked", ratelimit.Limits{TokensPerMinute: 1 << 50, RequestsPerSecond: 1e9}, benchBody},
		{
			"tokens_stream_with_usage",
			ratelimit.Limits{TokensPerMinute: 1 << 50},
			strings.Replace(benchBody, `"stream":true`, `"stream":true,"stream_options":{"include_usage":true}`, 1),
		},
	} {
		b.Run(bc.name, func(b *testing.B) {
			table := benchTable("http://127.0.0.1:1")
			cfg := frontdoor.DefaultConfig()
			cfg.Region = "us-east-1"
			body := bc.body
			if bc.limits != (ratelimit.Limits{}) {
				cfg.Tenants = directory{limits: map[string]ratelimit.Limits{"acme": bc.limits}}
				cfg.Limiter = ratelimit.New(ratelimit.DefaultConfig())
			} else {
				body = benchBody
			}
			h := frontdoor.New(cfg, table, policies{}, streamAtOnce{table}, nil,
				frontdoor.NewMetrics(prometheus.NewRegistry())).Handler()
			rd := strings.NewReader(body)
			r := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
			r.Header.Set(contract.HeaderTenant, "acme")
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(body)
				r.Body, r.ContentLength = io.NopCloser(rd), int64(len(body))
				clear(w.h)
				w.status = 0
				h.ServeHTTP(w, r)
				if w.status != http.StatusOK {
					b.Fatalf("status %d", w.status)
				}
			}
		})
	}
}

// benchStream is a streamed answer of five token events, the usage chunk and [DONE].
var benchStream = []byte(strings.Repeat(`data: {"choices":[{"index":0,"text":"tok"}]}`+"\n\n", 5) +
	`data: {"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":5}}` + "\n\n" + "data: [DONE]\n\n")

// streamAtOnce is answerAtOnce answering a stream, one write per event as a gateway's flushes
// arrive.
type streamAtOnce struct{ table *clustertable.Table }

func (a streamAtOnce) Forward(
	w http.ResponseWriter,
	r *http.Request,
	body []byte,
	targets []forward.Target,
	again forward.Retarget,
) error {
	w.Header().Set("Content-Type", "text/event-stream")
	if err := answerAtOnce(a).Forward(w, r, body, targets, again); err != nil {
		return err
	}
	for p := benchStream; len(p) > 0; {
		i := bytes.Index(p, []byte("\n\n")) + 2
		_, _ = w.Write(p[:i])
		p = p[i:]
	}
	return nil
}
