package pipeline_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/bbr"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/flowcontrol"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline"
	"github.com/switchyard-dev/switchyard/contract"
)

// sloPipeline is a Pipeline over one endpoint, a scheduler failing with err (nil: it answers
// the endpoint), objective "critical" configured, and metrics on a fresh registry.
func sloPipeline(t *testing.T, err error) (*pipeline.Pipeline, *capturing, *datastore.Endpoint, *prometheus.Registry) {
	t.Helper()
	store := datastore.NewStore(nil, nil)
	store.Sync([]datastore.EndpointSpec{{Address: "10.0.0.1:8000"}})
	ep := store.Endpoints()[0]
	ep.SetModels(&datastore.Models{Base: "llama"})
	sched := &capturing{eps: store.View().Endpoints(), err: err}
	router, rerr := bbr.NewRouter(bbr.DefaultConfig(), store)
	if rerr != nil {
		t.Fatal(rerr)
	}
	fcfg := flowcontrol.DefaultConfig()
	fcfg.Enabled = false
	fcfg.ObjectivePriorities = map[string]int{"critical": 5, "batch": -1}
	flow, ferr := flowcontrol.New(fcfg, sched, flowcontrol.Options{})
	if ferr != nil {
		t.Fatal(ferr)
	}
	reg := prometheus.NewPedanticRegistry()
	m, merr := pipeline.NewMetrics(reg)
	if merr != nil {
		t.Fatal(merr)
	}
	pipe, perr := pipeline.New(pipeline.Options{Router: router, Flow: flow, Classify: fcfg, Metrics: m,
		MapError: func(e error) *apierror.Error {
			if e == framework.ErrSLOUnattainable {
				return apierror.SLOUnattainable(e.Error(), 1)
			}
			return nil
		}})
	if perr != nil {
		t.Fatal(perr)
	}
	return pipe, sched, ep, reg
}

func headers(kv ...string) func(string) string {
	return func(name string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == name {
				return kv[i+1]
			}
		}
		return ""
	}
}

// Both front doors read the objectives through Decide: a value that is not milliseconds above 0
// and at most an hour is a 400 naming the header, counted by header; a good one reaches the
// scheduler with the request's arrival time.
func TestSLOHeaders(t *testing.T) {
	tests := []struct {
		name       string
		ttft, tpot string
		want       framework.SLO
		badHeader  string
	}{
		{name: "none"},
		{
			name: "both",
			ttft: "500",
			tpot: "25.5",
			want: framework.SLO{TTFT: 500 * time.Millisecond, TPOT: 25500 * time.Microsecond},
		},
		{name: "ttft only", ttft: " 1e3 ", want: framework.SLO{TTFT: time.Second}},
		{name: "not a number", ttft: "fast", badHeader: contract.HeaderSLOTTFT},
		{name: "negative", tpot: "-20", badHeader: contract.HeaderSLOTPOT},
		{name: "zero", ttft: "0", badHeader: contract.HeaderSLOTTFT},
		{name: "NaN", tpot: "NaN", badHeader: contract.HeaderSLOTPOT},
		{name: "infinite", ttft: "+Inf", badHeader: contract.HeaderSLOTTFT},
		{name: "huge", ttft: "1e400", badHeader: contract.HeaderSLOTTFT},
		{name: "over an hour", tpot: "3600001", badHeader: contract.HeaderSLOTPOT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pipe, sched, _, reg := sloPipeline(t, nil)
			var seen *framework.Request
			sched.onSchedule = func(r *framework.Request) { seen = r }
			before := time.Now()
			d, apiErr := pipe.Decide(context.Background(), []byte(`{"model":"llama","prompt":"hi"}`),
				headers(contract.HeaderSLOTTFT, tt.ttft, contract.HeaderSLOTPOT, tt.tpot), nil)
			if tt.badHeader != "" {
				if apiErr == nil || apiErr.Status != http.StatusBadRequest || apiErr.Param != tt.badHeader ||
					apiErr.Code != contract.ReasonInvalidRequest || !strings.Contains(apiErr.Message, tt.badHeader) {
					t.Fatalf("error %+v, want a 400 invalid_request naming %s", apiErr, tt.badHeader)
				}
				if seen != nil {
					t.Fatal("a request with a bad objective reached the scheduler")
				}
				if n := invalidCount(t, reg, tt.badHeader); n != 1 {
					t.Fatalf("invalid header count %v, want 1", n)
				}
				return
			}
			if apiErr != nil {
				t.Fatal(apiErr)
			}
			defer pipe.Done(d)
			if seen.SLO != tt.want || seen.Arrived.Before(before) || seen.Arrived != d.Started {
				t.Fatalf(
					"scheduler saw SLO %+v arrived %v, want %+v at the decision's start %v",
					seen.SLO,
					seen.Arrived,
					tt.want,
					d.Started,
				)
			}
		})
	}
}

// invalidCount reads switchyard_gateway_invalid_header_requests_total{header}.
func invalidCount(t *testing.T, reg *prometheus.Registry, header string) float64 {
	t.Helper()
	return counterValue(t, reg, "switchyard_gateway_invalid_header_requests_total", map[string]string{"header": header})
}

// Goodput at SLO is measured on the response stream: TTFT from the request's arrival, TPOT as
// the mean gap between tokens; refusals are counted apart; the objective label takes only
// configured names.
func TestSLOGoodput(t *testing.T) {
	pipe, _, ep, reg := sloPipeline(t, nil)
	ctx := context.Background()
	body := []byte(`{"model":"llama","prompt":"hi","stream":true}`)
	chunk := []byte("data: {\"choices\":[{\"text\":\"x\"}]}\n\n")
	serve := func(objective, ttft, tpot string, first, gap time.Duration, tokens, status int) {
		t.Helper()
		d, apiErr := pipe.Decide(
			ctx,
			body,
			headers(contract.HeaderObjective, objective, contract.HeaderSLOTTFT, ttft, contract.HeaderSLOTPOT, tpot),
			nil,
		)
		if apiErr != nil {
			t.Fatal(apiErr)
		}
		defer pipe.Done(d)
		a := pipe.Begin(ctx, d, ep)
		a.Respond(status, true)
		at := time.Now().Add(first)
		for range tokens {
			pipe.Observe(ctx, a, chunk, at)
			at = at.Add(gap)
		}
		pipe.End(ctx, a, status, nil, true)
	}
	ms := time.Millisecond
	serve("critical", "1000", "50", 100*ms, 20*ms, 5, 200)     // meets both
	serve("critical", "50", "10", 100*ms, 20*ms, 5, 200)       // misses both
	serve("", "1000", "", 100*ms, 20*ms, 5, 200)               // ttft only, no objective named
	serve("made-up-\xff", "1000", "50", 100*ms, 20*ms, 0, 503) // a failure misses; unknown objective → other
	serve("critical", "1000", "50", 100*ms, 0, 1, 200)         // one token: tpot not judged
	serve("critical", "", "", 100*ms, 20*ms, 5, 200)           // no objectives: not counted
	refusing, _, _, reg2 := sloPipeline(t, framework.ErrSLOUnattainable)
	if _, apiErr := refusing.Decide(
		ctx,
		body,
		headers(contract.HeaderObjective, "batch", contract.HeaderSLOTTFT, "10"),
		nil,
	); apiErr == nil ||
		apiErr.Status != http.StatusTooManyRequests ||
		apiErr.Code != contract.ReasonSLOUnattainable {
		t.Fatalf("refusal %+v, want 429 slo_unattainable", apiErr)
	}
	for _, c := range []struct {
		reg                    *prometheus.Registry
		objective, slo, result string
		want                   float64
	}{
		{reg, "critical", "ttft", "met", 2}, {reg, "critical", "ttft", "missed", 1},
		{reg, "critical", "tpot", "met", 1}, {reg, "critical", "tpot", "missed", 1},
		{reg, "none", "ttft", "met", 1}, {reg, "none", "tpot", "met", 0},
		{reg, "other", "ttft", "missed", 1}, {reg, "other", "tpot", "missed", 1},
		{reg, "batch", "ttft", "met", 0},
		{reg2, "batch", "ttft", "refused", 1}, {reg2, "batch", "tpot", "refused", 0},
	} {
		if got := sloCount(t, c.reg, c.objective, c.slo, c.result); got != c.want {
			t.Errorf(
				"slo_requests_total{objective=%q,slo=%q,outcome=%q} = %v, want %v",
				c.objective,
				c.slo,
				c.result,
				got,
				c.want,
			)
		}
	}
	// Only configured names, none and other: 4 objectives × 2 slos × 3 outcomes.
	if n := testutil.CollectAndCount(reg, "switchyard_gateway_slo_requests_total"); n != 4*2*3 {
		t.Errorf("%d series, want %d", n, 4*2*3)
	}
}

func sloCount(t *testing.T, reg *prometheus.Registry, objective, slo, outcome string) float64 {
	t.Helper()
	return counterValue(
		t,
		reg,
		"switchyard_gateway_slo_requests_total",
		map[string]string{"objective": objective, "slo": slo, "outcome": outcome},
	)
}

// counterValue reads the counter of family whose labels are want.
func counterValue(t *testing.T, reg *prometheus.Registry, family string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := want[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no series %s%v", family, want)
	return 0
}
