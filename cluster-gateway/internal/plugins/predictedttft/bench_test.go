package predictedttft_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// BenchmarkScore scores 1,000 measured endpoints.
func BenchmarkScore(b *testing.B) {
	f := newFixture(b, 1000)
	for i := range f.eps {
		f.serve(i, 1000, time.Duration(50+i%10)*time.Millisecond, 10*time.Millisecond)
	}
	req := &framework.Request{PromptTokens: 1000}
	scores := make([]float64, len(f.eps))
	cs := &framework.CycleState{Now: f.h.Now()}
	b.ReportAllocs()
	for b.Loop() {
		f.s.Score(context.Background(), cs, req, f.eps, scores)
	}
}
