package frontdoor_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/ratelimit"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
)

// streamForwarder answers like a model server streaming three tokens, written a few bytes at a
// time, with the usage chunk last when the body it is sent asks for it; it records the bodies.
type streamForwarder struct {
	mu     sync.Mutex
	bodies []string
}

const (
	streamTokens = `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"a"}}]}` +
		"\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"b"}}]}` +
		"\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` +
		"\n\n"
	streamUsage = `data: {"id":"c","object":"chat.completion.chunk","choices":[],` +
		`"usage":{"prompt_tokens":37,"completion_tokens":3,"total_tokens":40}}` + "\n\n"
	streamDone = "data: [DONE]\n\n"
)

func (f *streamForwarder) Forward(
	w http.ResponseWriter,
	_ *http.Request,
	body []byte,
	_ []forward.Target,
	_ forward.Retarget,
) error {
	f.mu.Lock()
	f.bodies = append(f.bodies, string(body))
	f.mu.Unlock()
	var req struct {
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	_ = json.Unmarshal(body, &req)
	out := streamTokens
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		out += streamUsage
	}
	out += streamDone
	w.Header().Set("Content-Type", "text/event-stream")
	for len(out) > 0 { // odd-sized writes: events and lines split across them
		n := min(7, len(out))
		if _, err := w.Write([]byte(out[:n])); err != nil {
			return nil
		}
		out = out[n:]
	}
	return nil
}

func (f *streamForwarder) last() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[len(f.bodies)-1]
}

// TestStreamsChargedFromUsage: a streamed request of a tenant with a token limit is forwarded
// asking for the usage chunk, the client's stream loses it when the client did not ask for it,
// and the tenant is charged exactly the usage the model server reported.
func TestStreamsChargedFromUsage(t *testing.T) {
	const asks = `{"model":"llama","messages":[{"role":"user","content":"hi"}],"stream":true,` +
		`"stream_options":{"include_usage":true},"max_tokens":50}`
	tests := []struct {
		name, path, body string
		limits           ratelimit.Limits
		wantBody         string // forwarded; "" is the body as sent
		wantStream       string
		wantCharged      int64
	}{
		{
			name:   "stream without usage",
			path:   "/v1/chat/completions",
			body:   `{"model":"llama","messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":50}`,
			limits: ratelimit.Limits{TokensPerMinute: 10_000},
			wantBody: `{"model":"llama","messages":[{"role":"user","content":"hi"}],"stream":true,` +
				`"max_tokens":50,"stream_options":{"include_usage":true}}`,
			wantStream:  streamTokens + streamDone,
			wantCharged: 40,
		},
		{
			name: "include_usage false, completions",
			path: "/v1/completions",
			body: `{"model":"llama","prompt":"hi","stream":true,"stream_options":{"include_usage":false},` +
				`"max_tokens":50}`,
			limits:      ratelimit.Limits{TokensPerMinute: 10_000},
			wantBody:    `{"model":"llama","prompt":"hi","stream":true,"stream_options":{"include_usage":true},"max_tokens":50}`,
			wantStream:  streamTokens + streamDone,
			wantCharged: 40,
		},
		{
			name:        "client asked for usage",
			path:        "/v1/chat/completions",
			body:        asks,
			limits:      ratelimit.Limits{TokensPerMinute: 10_000},
			wantStream:  streamTokens + streamUsage + streamDone,
			wantCharged: 40,
		},
		{
			name:        "no token limit: forwarded as sent",
			path:        "/v1/chat/completions",
			body:        `{"model":"llama","messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":50}`,
			limits:      ratelimit.Limits{RequestsPerSecond: 100},
			wantStream:  streamTokens + streamDone,
			wantCharged: 0,
		},
		{
			name:       "responses API: forwarded as sent",
			path:       "/v1/responses",
			body:       `{"model":"llama","input":"hi","stream":true,"max_output_tokens":50}`,
			limits:     ratelimit.Limits{TokensPerMinute: 10_000},
			wantStream: streamTokens + streamDone,
			// no usage reported: the reservation, 0 prompt tokens (2 bytes) + 50, stays charged
			wantCharged: 50,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fwd := &streamForwarder{}
			lim := ratelimit.New(ratelimit.DefaultConfig())
			reg := prometheus.NewRegistry()
			h := streamServer(t, tt.limits, lim, fwd, reg)
			req := httptest.NewRequest(http.MethodPost, tt.path, strings.NewReader(tt.body))
			req.Header.Set(contract.HeaderTenant, "acme")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			want := tt.wantBody
			if want == "" {
				want = tt.body
			}
			if got := fwd.last(); got != want {
				t.Fatalf("forwarded\n%s\nwant\n%s", got, want)
			}
			if got := rec.Body.String(); got != tt.wantStream {
				t.Fatalf("client's stream\n%q\nwant\n%q", got, tt.wantStream)
			}
			if used, inFlight := lim.Used("acme"); used != tt.wantCharged || inFlight != 0 {
				t.Fatalf("charged %d tokens with %d in flight, want %d and 0", used, inFlight, tt.wantCharged)
			}
			asked := 0.0
			if tt.wantBody != "" {
				asked = 1
			}
			if got := counterValue(
				t,
				reg,
				"switchyard_router_tenant_stream_usage_asked_total",
				"outcome",
				"asked",
			); got != asked {
				t.Fatalf("usage_asked_total{outcome=asked} = %v, want %v", got, asked)
			}
		})
	}
}

func streamServer(
	t *testing.T,
	lim ratelimit.Limits,
	l *ratelimit.Limiter,
	fwd frontdoor.Forwarder,
	reg prometheus.Registerer,
) http.Handler {
	t.Helper()
	f := newFleet(t, clusterSpec{name: "east", region: "us-east-1", kvUsed: 0.1})
	tb := clustertable.New(clustertable.Config{Region: "us-east-1"}, f, nil)
	cfg := frontdoor.DefaultConfig()
	cfg.Region, cfg.QueueWait = "us-east-1", 0
	cfg.Tenants = directory{limits: map[string]ratelimit.Limits{"acme": lim}}
	cfg.Limiter = l
	return frontdoor.New(cfg, tb, policies{}, fwd, nil, frontdoor.NewMetrics(reg)).Handler()
}
