package report_test

import (
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
)

// BenchmarkSummarize summarises one target of 10,000 requests with 200 tokens each.
func BenchmarkSummarize(b *testing.B) {
	tr := loadgen.TargetResult{Name: "t"}
	itls := make([]time.Duration, 199)
	for i := range itls {
		itls[i] = time.Duration(10+i%7) * time.Millisecond
	}
	for i := range 10_000 {
		s := loadgen.Sample{
			Index:        i,
			Sent:         time.Duration(i) * 6 * time.Millisecond,
			TTFT:         time.Duration(50+i%300) * time.Millisecond,
			E2E:          3 * time.Second,
			ITLs:         itls,
			OutputTokens: 200,
			PromptTokens: 1000,
			MaxTokens:    200,
			Endpoint:     "pod",
		}
		if i%100 == 0 {
			s.Error = loadgen.ErrHTTP5xx
		}
		tr.Samples = append(tr.Samples, s)
	}
	res := &loadgen.Result{Workload: "w", Targets: []loadgen.TargetResult{tr}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := report.Summarize(res, ""); err != nil {
			b.Fatal(err)
		}
	}
}
