package replica

import (
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// BenchmarkOutboxAdd prices what a routed request costs its replica (Sharer.Routed's work under
// the lock): a 256-block prompt of one of 50 shared system prompts, deduplicated within a batch.
func BenchmarkOutboxAdd(b *testing.B) {
	prompts := make([][]uint64, 50)
	for i := range prompts {
		prompts[i] = make([]uint64, 256)
		for j := range prompts[i] {
			prompts[i][j] = uint64(i)<<32 | uint64(j)
		}
	}
	o := newOutbox(DefaultConfig().MaxBatchBytes)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if !o.add("llama", "10.0.0.1:8000", prompts[i%len(prompts)]) || i%500 == 499 {
			o.take() // a batch leaves every Interval
		}
	}
}

// BenchmarkDecodeLoad prices applying one full load packet's decoding.
func BenchmarkDecodeLoad(b *testing.B) {
	h := header{kind: kindLoad, cluster: "c1", sender: "gateway-c1-a"}
	var entries []loadEntry
	for i := range 40 {
		entries = append(entries, loadEntry{addr: "10.0.0." + string(rune('0'+i%10)) + ":8000", load: framework.InFlightLoad{
			Requests: 3, Prefilling: 1, PrefillTokens: 900,
		}})
	}
	msg := packets(h, 1200, len(entries), func(buf []byte, i int) []byte { return appendLoad(buf, entries[i]) })[0]
	b.ReportAllocs()
	for b.Loop() {
		_, d, err := decodeHeader(msg)
		if err != nil {
			b.Fatal(err)
		}
		if err := decodeLoad(d, func(loadEntry) {}); err != nil {
			b.Fatal(err)
		}
	}
}
