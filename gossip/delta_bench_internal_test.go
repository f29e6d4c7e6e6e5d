package gossip

import (
	"testing"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// BenchmarkDeltaFigures compares the delta's figure masks (only the changed figures, as packed
// varints) with the standard alternative the codec also writes for old readers: every changed
// model's figures as a whole ModelCapacity message (legacyDelta). Each iteration encodes the
// delta, decodes it and applies it to the base; bytes/delta is its size on the wire. "typical"
// is a busy gateway's change between two publications (queue and free KV of 4 of 20 models),
// "every" the worst case (four figures of every model).
func BenchmarkDeltaFigures(b *testing.B) {
	base := deltaBase(10, 20, 10)
	changes := []struct {
		name string
		edit func(s *gossipv1.CapacitySummary)
	}{
		{"typical", func(s *gossipv1.CapacitySummary) {
			for _, m := range s.Models[:4] {
				m.QueueDepth, m.FreeKvTokens = m.QueueDepth+3, m.FreeKvTokens+40_000
			}
		}},
		{"every", func(s *gossipv1.CapacitySummary) {
			for _, m := range s.Models {
				m.QueueDepth, m.Running, m.FreeKvTokens, m.PredictedTtftMs = m.QueueDepth+7, m.Running+7, m.FreeKvTokens+25_000, 96
			}
		}},
	}
	for _, c := range changes {
		next := edit(base, 11, c.edit)
		for _, form := range []struct {
			name string
			make func() *gossipv1.SummaryDelta
		}{
			{"masks", func() *gossipv1.SummaryDelta { return diffSummary(base, next) }},
			{"messages", func() *gossipv1.SummaryDelta { return legacyDelta(diffSummary(base, next), next) }},
		} {
			b.Run(c.name+"/"+form.name, func(b *testing.B) {
				d := form.make()
				b.ReportAllocs()
				var n int
				for b.Loop() {
					blob, err := encodeDelta(d)
					if err != nil {
						b.Fatal(err)
					}
					got, err := decodeDelta(blob, "gw", 11, 1<<20)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := applyDelta(base, got); err != nil {
						b.Fatal(err)
					}
					n = len(blob)
				}
				b.ReportMetric(float64(n), "bytes/delta")
			})
		}
	}
}
