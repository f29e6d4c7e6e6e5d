package frontdoor_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/ratelimit"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
)

// bigAnswerForwarder answers a JSON body of pad bytes of whitespace, then the usage, in 16 KiB
// writes; it records the budget in use once the padding has been written.
type bigAnswerForwarder struct {
	budget *body.Budget
	pad    int
	usage  string
	inUse  int64
}

func (f *bigAnswerForwarder) Forward(
	w http.ResponseWriter,
	_ *http.Request,
	_ []byte,
	_ []forward.Target,
	_ forward.Retarget,
) error {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"choices":[{"text":"hi"}]`))
	chunk := []byte(strings.Repeat(" ", 16<<10))
	for n := 0; n < f.pad; n += len(chunk) {
		_, _ = w.Write(chunk)
	}
	f.inUse = f.budget.InUse()
	_, _ = w.Write([]byte(`,"usage":` + f.usage + `}`))
	return nil
}

// TestAnswerBufferChargedToTheBodyBudget: the JSON answer the front door buffers to read a
// tenant's usage is reserved from the in-flight body budget, and given back when the answer
// is forwarded; an answer the budget cannot hold is passed on whole but unmetered, so the
// tenant stays charged its reservation (counted in switchyard_router_response_unmetered_total).
func TestAnswerBufferChargedToTheBodyBudget(t *testing.T) {
	tests := []struct {
		name      string
		budget    int64
		pad       int
		charged   bool   // the buffered answer shows in the budget
		next      int    // the status of a second request reserving 501 tokens
		unmetered string // the reason counted, "" for none
	}{
		// Reported usage 2 + 2 replaces the 500 reserved: the second request fits.
		{"metered", 1 << 20, 200 << 10, true, http.StatusOK, ""},
		// The budget holds the request but not a 200 KiB answer: the 500 reserved stay charged.
		{"budget spent", 64 << 10, 200 << 10, false, http.StatusTooManyRequests, "budget"},
		// Over 1 MiB the answer is not metered (its buffer given back), whatever the budget.
		{"too large", 8 << 20, 1100 << 10, false, http.StatusTooManyRequests, "too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			budget := body.NewBudget(tt.budget)
			fwd := &bigAnswerForwarder{budget: budget, pad: tt.pad, usage: `{"prompt_tokens":2,"completion_tokens":2}`}
			f := newFleet(t, clusterSpec{name: "east", region: "us-east-1", kvUsed: 0.1})
			tb := clustertable.New(clustertable.Config{Region: "us-east-1"}, f, nil)
			cfg := frontdoor.DefaultConfig()
			cfg.Region, cfg.QueueWait, cfg.Bodies = "us-east-1", 0, budget
			cfg.Tenants = directory{limits: map[string]ratelimit.Limits{"acme": {TokensPerMinute: 1000}}}
			cfg.Limiter = ratelimit.New(ratelimit.DefaultConfig())
			reg := prometheus.NewRegistry()
			h := frontdoor.New(cfg, tb, policies{}, fwd, nil, frontdoor.NewMetrics(reg)).Handler()
			acme := map[string]string{contract.HeaderTenant: "acme"}
			rec := send(h, `{"model":"llama","prompt":"abcd","max_tokens":500}`, acme)
			if rec.Code != http.StatusOK || rec.Body.Len() < tt.pad {
				t.Fatalf("answer: %d, %d bytes; want 200 with the whole body", rec.Code, rec.Body.Len())
			}
			if charged := fwd.inUse > 4<<10; charged != tt.charged {
				t.Fatalf("budget in use while answering: %d bytes; want the answer charged: %t", fwd.inUse, tt.charged)
			}
			if in := budget.InUse(); in != 0 {
				t.Fatalf("after the answer the budget holds %d bytes", in)
			}
			if rec := send(h, `{"model":"llama","prompt":"abcd","max_tokens":500}`, acme); rec.Code != tt.next {
				t.Fatalf("second request: %d, want %d", rec.Code, tt.next)
			}
			for _, reason := range []string{"budget", "too_large"} {
				want := 0.0
				if reason == tt.unmetered {
					want = 1 // the second request is refused before it is answered
				}
				c, err := unmeteredCount(reg, reason)
				if err != nil || c != want {
					t.Fatalf("unmetered{reason=%q} = %v (%v), want %v", reason, c, err, want)
				}
			}
		})
	}
}

func unmeteredCount(reg *prometheus.Registry, reason string) (float64, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return 0, err
	}
	for _, mf := range mfs {
		if mf.GetName() != "switchyard_router_response_unmetered_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue(), nil
				}
			}
		}
	}
	return 0, nil
}
