package workload_test

import (
	"testing"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// BenchmarkGenerateMixedFleet generates the 60 s mixed-fleet sequence (~1,200 requests with
// 1,000-token prompts on average).
func BenchmarkGenerateMixedFleet(b *testing.B) {
	w, err := workload.Load("mixed-fleet")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := workload.Generate(w, w.Seed); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGeneratorRequest is one request of the shared-prefix workload (7,200-token prompt).
func BenchmarkGeneratorRequest(b *testing.B) {
	w, err := workload.Load("shared-prefix")
	if err != nil {
		b.Fatal(err)
	}
	g := workload.NewGenerator(w, w.Seed)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = g.Request(i)
		i++
	}
}
