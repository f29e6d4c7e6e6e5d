package pipelinetest_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline/pipelinetest"
)

// The log takes records from many goroutines at once (the race detector checks it) and hands
// back every one.
func TestLogConcurrentWrites(t *testing.T) {
	log := pipelinetest.NewLog()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				log.Logger.Warn("request body budget spent", "writer", i, "n", j)
				_ = log.String()
			}
		})
	}
	wg.Wait()
	got := log.String()
	if n := strings.Count(got, `"msg":"request body budget spent"`); n != 400 {
		t.Fatalf("%d records, want 400:\n%s", n, got)
	}
}

// fakeTB records a failure instead of stopping the test.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) { f.failed = fmt.Sprintf(format, args...) }

func TestBodyRefused(t *testing.T) {
	reg := prometheus.NewRegistry()
	refused := prometheus.NewCounterVec(
		prometheus.CounterOpts{Name: pipelinetest.BodyRefusedMetric, Help: "refused"},
		[]string{"door", "reason"},
	)
	reg.MustRegister(refused)
	refused.WithLabelValues("http", "budget").Add(2)
	refused.WithLabelValues("ext_proc", "budget").Inc()
	tests := []struct {
		door, reason string
		want         float64
		wantFail     string
	}{
		{door: "http", reason: "budget", want: 2},
		{door: "ext_proc", reason: "budget", want: 1},
		{
			door:     "http",
			reason:   "timeout",
			wantFail: `no switchyard_gateway_request_body_refused_total{door="http",reason="timeout"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.door+"/"+tt.reason, func(t *testing.T) {
			tb := &fakeTB{TB: t}
			got := pipelinetest.BodyRefused(tb, reg, tt.door, tt.reason)
			if got != tt.want || !strings.Contains(tb.failed, tt.wantFail) || (tt.wantFail == "") != (tb.failed == "") {
				t.Fatalf("got %v, failure %q; want %v, failure %q", got, tb.failed, tt.want, tt.wantFail)
			}
		})
	}
}
